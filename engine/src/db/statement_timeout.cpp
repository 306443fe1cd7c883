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
  pq::exec(conn, "cannot set the statement timeout", "SELECT set_config('statement_timeout', $1, true)",
           {std::to_string(limit.count())});
  work();
  tx.commit();
}

}  // namespace prescient
