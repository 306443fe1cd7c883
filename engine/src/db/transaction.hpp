#pragma once
// Internal: a transaction on a session that may be the application's, with one already open. With none
// open it begins one and commits it; inside the caller's it takes a savepoint and releases it, so the
// work commits or rolls back with the caller's transaction, and a failure undoes this work only, leaving
// the caller's transaction usable. Left without commit() (an exception), it rolls back what it began.
#include <libpq-fe.h>

#include <chrono>
#include <string>

namespace soci {
class session;
}

namespace prescient::db {

class Transaction {
 public:
  enum class Mode {
    read_write,
    // One repeatable-read snapshot, read only: figures read in it add up. (Joining a caller's
    // transaction, it takes the caller's isolation.)
    read_only_snapshot,
  };
  explicit Transaction(soci::session& db, Mode mode = Mode::read_write);
  explicit Transaction(PGconn* conn, Mode mode = Mode::read_write);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  void commit();
  // The same, the COMMIT (of a transaction this object began) waiting at most `limit` for its answer:
  // past it the connection is closed and the outcome is unknown (pq::exec_within).
  void commit(std::chrono::milliseconds limit);
  bool joined() const { return !savepoint_.empty(); }  // inside the caller's transaction

 private:
  PGconn* conn_;
  std::string savepoint_;  // empty: this object began the transaction
  bool done_ = false;
};

}  // namespace prescient::db
