#include "db/sql_class.hpp"

#include "db/connection.hpp"
#include "db/pq.hpp"
#include "prescient/database.hpp"

namespace prescient::db {

std::optional<TimePoint> call_check_function(soci::session& db, const std::string& function,
                                             const std::string& entity_key, const std::string& payload,
                                             int check_count, std::chrono::milliseconds timeout) {
  PGconn* conn = native_connection(db);
  std::optional<pq::Result> next;
  // The run's timeout also bounds the statement, so the function cannot outlive the run.
  within_statement_timeout(db, timeout, [&] {
    next = pq::exec(conn, "the check function failed",
                    "SELECT prescient.us(prescient.call_check_function($1, $2, $3::jsonb, $4))",
                    {function, entity_key, payload, std::to_string(check_count)});
  });
  return next->optional_time(0, 0);
}

}  // namespace prescient::db
