#include "db/transaction.hpp"

#include <atomic>

#include "db/pq.hpp"
#include "db/connection.hpp"
#include "prescient/database.hpp"

namespace prescient::db {

Transaction::Transaction(soci::session& db, Mode mode) : Transaction(native_connection(db), mode) {}

Transaction::Transaction(PGconn* conn, Mode mode) : conn_(conn) {
  if (PQtransactionStatus(conn_) == PQTRANS_IDLE) {
    pq::exec(conn_, "cannot begin a transaction",
             mode == Mode::read_only_snapshot ? "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" : "BEGIN");
    return;
  }
  // Unique per process, so transactions nested on one session each roll back to their own savepoint.
  static std::atomic<unsigned long> counter{0};
  savepoint_ = "prescient_tx_" + std::to_string(++counter);
  pq::exec(conn_, "cannot set a savepoint", "SAVEPOINT " + savepoint_);
}

void Transaction::commit() {
  pq::exec(conn_, "cannot commit", joined() ? "RELEASE SAVEPOINT " + savepoint_ : "COMMIT");
  done_ = true;
}

void Transaction::commit(std::chrono::milliseconds limit) {
  if (joined()) return commit();  // the caller's COMMIT is the caller's
  pq::exec_within(conn_, "cannot commit", "COMMIT", limit);
  done_ = true;
}

Transaction::~Transaction() {
  if (done_) return;
  // A failure here means the session is gone: the server has rolled back already.
  const std::string undo = joined() ? "ROLLBACK TO SAVEPOINT " + savepoint_ + "; RELEASE SAVEPOINT " + savepoint_
                                    : "ROLLBACK";
  PQclear(PQexec(conn_, undo.c_str()));
}

}  // namespace prescient::db
