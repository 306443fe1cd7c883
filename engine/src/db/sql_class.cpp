#include "db/sql_class.hpp"

#include "db/connection.hpp"
#include "db/pq.hpp"
#include "db/transaction.hpp"

namespace prescient::db {

std::optional<TimePoint> call_check_function(soci::session& db, const std::string& function,
                                             const std::string& entity_key, const std::string& payload,
                                             int check_count, std::chrono::milliseconds timeout) {
  PGconn* conn = native_connection(db);
  detail::Transaction tx(conn);
  // The run's timeout also bounds the statement, so the function cannot outlive the run.
  pq::exec(conn, "cannot set the statement timeout", "SELECT set_config('statement_timeout', $1, true)",
           {std::to_string(timeout.count())});
  const pq::Result next = pq::exec(
      conn, "the check function failed",
      "SELECT prescient.us(prescient.call_check_function($1, $2, $3::jsonb, $4))",
      {function, entity_key, payload, std::to_string(check_count)});
  tx.commit();
  return next.optional_time(0, 0);
}

}  // namespace prescient::db
