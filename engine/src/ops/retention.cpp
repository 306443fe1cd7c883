#include "prescient/retention.hpp"

#include <spdlog/spdlog.h>

#include <functional>
#include <string>
#include <thread>

#include "db/retention.hpp"
#include "prescient/errors.hpp"

namespace prescient {
namespace {

// Runs one batch after another until a batch comes back short; how many went in all.
std::int64_t in_batches(int batch, const std::function<std::int64_t(int)>& one_batch) {
  std::int64_t total = 0;
  while (true) {
    const std::int64_t gone = one_batch(batch);
    total += gone;
    if (gone < batch) return total;
  }
}

// A drop waits at most 2 s for its lock (see drop_history_partition); runners may hold job_history
// that long while a batch's jobs run, so try a few times before giving up.
std::int64_t drop_partition(soci::session& db, const std::string& name) {
  constexpr int kAttempts = 5;
  for (int attempt = 1;; ++attempt) {
    try {
      return db::drop_history_partition(db, name);
    } catch (const DatabaseError& e) {
      // 55P03 lock_not_available: the lock_timeout ran out (by SQLSTATE: the message is translated).
      if (attempt == kAttempts || e.sqlstate() != "55P03") throw;
      spdlog::warn("purge: {} is busy (attempt {} of {}), trying again", name, attempt, kAttempts);
      std::this_thread::sleep_for(std::chrono::seconds{attempt});
    }
  }
}

}  // namespace

HistoryPurge purge_history(soci::session& db, TimePoint before, int batch) {
  HistoryPurge purge;
  for (const std::string& name : db::history_months_before(db, before)) {
    const std::int64_t rows = drop_partition(db, name);
    spdlog::info("purge: dropped history partition {} ({} rows)", name, rows);
    purge.rows += rows;
    ++purge.months_dropped;
  }
  purge.rows += in_batches(batch, [&](int limit) { return db::purge_history_rows(db, before, limit); });
  purge.runs = in_batches(batch, [&](int limit) { return db::purge_check_runs(db, before, limit); });
  purge.deferrals = in_batches(batch, [&](int limit) { return db::purge_deferrals(db, before, limit); });
  purge.flow_figures = in_batches(batch, [&](int limit) { return db::purge_flow_figures(db, before, limit); });
  return purge;
}

std::int64_t purge_dead_letters(soci::session& db, TimePoint before, int batch) {
  return in_batches(batch, [&](int limit) { return db::purge_dead_letters(db, before, limit); });
}

std::int64_t purge_events(soci::session& db, TimePoint before, int batch) {
  return in_batches(batch, [&](int limit) { return db::purge_events(db, before, limit); });
}

RetentionRun apply_retention(soci::session& db, TimePoint now, int batch) {
  const Retention retention = read_retention(db);
  RetentionRun run;
  if (retention.dead_letters) run.dead_letters = purge_dead_letters(db, now - *retention.dead_letters, batch);
  if (retention.history) run.history = purge_history(db, now - *retention.history, batch);
  if (retention.events) run.events = purge_events(db, now - *retention.events, batch);
  run.idle_flow_rows = in_batches(batch, [&](int limit) { return db::forget_idle_flow_rows(db, now, limit); });
  return run;
}

}  // namespace prescient
