// Bounding the server's work for one request: a transaction whose statements the server stops after a limit.
#include "db/connection.hpp"
#include "db/pq.hpp"
#include "db/transaction.hpp"
#include "prescient/database.hpp"

namespace prescient {

using namespace prescient::db;

void within_statement_timeout(soci::session& db, std::chrono::milliseconds limit, const std::function<void()>& work) {
  PGconn* conn = native_connection(db);
  db::Transaction tx(conn);
  const std::string before =
      pq::exec(conn, "cannot set the statement timeout",
               "SELECT current_setting('statement_timeout'), set_config('statement_timeout', $1, true)",
               {std::to_string(limit.count())})
          .text(0, 0);
  work();
  // The limit is the work's, never the commit's (this one, or the caller's when joined): a statement
  // timeout that fires while a COMMIT waits for a synchronous standby cancels the wait, and the server then
  // reports as committed what only it holds, which a failover loses. A commit that hangs is ended by closing
  // the connection, its outcome unknown.
  pq::exec(conn, "cannot reset the statement timeout", "SELECT set_config('statement_timeout', $1, true)", {before});
  tx.commit();
}

}  // namespace prescient
