#include "sql_job.hpp"

#include "db/sql_class.hpp"

namespace prescient::jobs {

JobResult SqlJob::run(const Check& check, JobContext& ctx) {
  const auto function = check.payload.find("function");
  if (function == check.payload.end() || !function->is_string()) {
    throw std::runtime_error("the sql job needs payload.function, e.g. {\"function\": \"app.check_order\"}");
  }
  const db::CheckFunctionAnswer answer = db::call_check_function(
      ctx.db(), function->get<std::string>(), check.entity_key, check.payload.dump(), check.check_count, ctx.timeout());
  JobResult out{.next = answer.next};
  if (answer.result) out.result = nlohmann::json::parse(*answer.result);  // jsonb's text: JSON
  return out;
}

}  // namespace prescient::jobs
