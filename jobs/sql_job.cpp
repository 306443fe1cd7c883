#include "sql_job.hpp"

#include <soci/soci.h>

#include "prescient/time.hpp"

namespace prescient {

JobResult SqlJob::run(const Check& check, JobContext& ctx) {
  const auto function = check.payload.find("function");
  if (function == check.payload.end() || !function->is_string()) {
    throw std::runtime_error("the sql job needs payload.function, e.g. {\"function\": \"app.check_order\"}");
  }
  const std::string name = function->get<std::string>();
  const std::string payload = check.payload.dump();
  long long next_us = 0;
  soci::indicator next_null = soci::i_null;
  soci::session& db = ctx.db();
  soci::transaction tx(db);
  // The run's timeout also bounds the statement, so the function cannot outlive the run.
  const std::string timeout_ms = std::to_string(ctx.timeout().count());
  db << "SELECT set_config('statement_timeout', :ms, true)", soci::use(timeout_ms);
  db << "SELECT prescient.us(prescient.call_check_function(:fn, :key, CAST(:payload AS jsonb), :count))",
      soci::use(name), soci::use(check.entity_key), soci::use(payload), soci::use(check.check_count),
      soci::into(next_us, next_null);
  tx.commit();
  if (next_null == soci::i_null) return {};
  return {.next = from_unix_micros(next_us)};
}

}  // namespace prescient
