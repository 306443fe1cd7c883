#include "prescient/retention.hpp"

#include <spdlog/spdlog.h>

#include <string>
#include <thread>

#include "db/pq.hpp"
#include "db/connection.hpp"
#include "prescient/database.hpp"
#include "prescient/errors.hpp"

namespace prescient {
namespace {

// Runs a deleting statement (parameters: the cut-off, the batch size; one row: how many went) until a
// batch comes back short.
std::int64_t delete_in_batches(PGconn* conn, const char* what, const std::string& sql, TimePoint before, int batch) {
  std::int64_t total = 0;
  while (true) {
    const std::int64_t gone = pq::exec(conn, what, sql, {pq::micros(before), std::to_string(batch)}).integer(0, 0);
    total += gone;
    if (gone < batch) return total;
  }
}

// A drop waits at most 2 s for its lock (see drop_history_partition); runners may hold job_history
// that long while a batch's jobs run, so try a few times before giving up.
std::int64_t drop_partition(PGconn* conn, const std::string& name) {
  constexpr int kAttempts = 5;
  for (int attempt = 1;; ++attempt) {
    try {
      return pq::exec(conn, "cannot drop history partition " + name, "SELECT prescient.drop_history_partition($1)",
                      {name})
          .integer(0, 0);
    } catch (const DatabaseError& e) {
      // 55P03 lock_not_available: the lock_timeout ran out (by SQLSTATE: the message is translated).
      if (attempt == kAttempts || e.sqlstate() != "55P03") throw;
      spdlog::warn("purge: {} is busy (attempt {} of {}), trying again", name, attempt, kAttempts);
      std::this_thread::sleep_for(std::chrono::seconds{attempt});
    }
  }
}

}  // namespace

int ensure_history_partitions(soci::session& db, TimePoint now) {
  const int created = static_cast<int>(pq::exec(native_connection(db), "cannot create history partitions",
                                                "SELECT prescient.ensure_history_partitions(prescient.at_us($1))",
                                                {pq::micros(now)})
                                           .integer(0, 0));
  if (created > 0) spdlog::info("created {} monthly history partition(s)", created);
  return created;
}

HistoryPurge purge_history(soci::session& db, TimePoint before, int batch) {
  PGconn* conn = native_connection(db);
  HistoryPurge purge;
  const pq::Result months = pq::exec(conn, "cannot list history partitions",
                                     "SELECT name FROM prescient.history_partitions()"
                                     " WHERE ends_at <= prescient.at_us($1) ORDER BY starts_at",
                                     {pq::micros(before)});
  for (int m = 0; m < months.rows(); ++m) {
    const std::string name = months.text(m, 0);
    const std::int64_t rows = drop_partition(conn, name);
    spdlog::info("purge: dropped history partition {} ({} rows)", name, rows);
    purge.rows += rows;
    ++purge.months_dropped;
  }
  purge.rows += delete_in_batches(conn, "cannot purge history", "SELECT prescient.purge_history_rows(prescient.at_us($1), $2)",
                                  before, batch);
  return purge;
}

std::int64_t purge_events(soci::session& db, TimePoint before, int batch) {
  return delete_in_batches(native_connection(db), "cannot purge events",
                           "WITH gone AS (DELETE FROM prescient.event WHERE seq IN ("
                           "  SELECT seq FROM prescient.event WHERE emitted_at < prescient.at_us($1) LIMIT $2)"
                           "  RETURNING 1)"
                           " SELECT count(*) FROM gone",
                           before, batch);
}

}  // namespace prescient
