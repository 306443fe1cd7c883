#include "db/sql_class.hpp"

#include "db/connection.hpp"
#include "db/pq.hpp"
#include "prescient/database.hpp"

namespace prescient::db {

CheckFunctionAnswer call_check_function(soci::session& db, const std::string& function, const std::string& entity_key,
                                        const std::string& payload, int check_count,
                                        std::chrono::milliseconds timeout) {
  PGconn* conn = native_connection(db);
  std::optional<pq::Result> answer;
  // The run's timeout also bounds the statement, so the function cannot outlive the run.
  within_statement_timeout(db, timeout, [&] {
    answer = pq::exec(conn, "the check function failed",
                      "SELECT prescient.us(next_check_at), result::text"
                      "  FROM prescient.call_check_function($1, $2, $3::jsonb, $4)",
                      {function, entity_key, payload, std::to_string(check_count)});
  });
  return {.next = answer->optional_time(0, 0), .result = answer->optional_text(0, 1)};
}

}  // namespace prescient::db
