#pragma once
// Retention and the upkeep it relies on: job_history is partitioned by month (sql/0013), so purging it
// drops whole months and deletes rows only in the month the cut-off falls in; the event outbox is
// purged row by row (its ids must stay unique across all of it, which a partitioned table cannot
// enforce).
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "prescient/clock.hpp"

#include "prescient/time.hpp"

namespace soci {
class session;
}

namespace prescient {

// Creates the monthly history partitions from now's month through three months later that do not
// exist yet; returns how many it created. Cheap when they all exist (the daemon calls it hourly).
int ensure_history_partitions(soci::session& db, TimePoint now);

struct HistoryPurge {
  std::int64_t rows = 0;  // all history rows removed, dropped months included
  int months_dropped = 0;
  std::int64_t deferrals = 0;  // records of flow limits' deferrals (part of checks' traces) removed
  std::int64_t runs = 0;       // runs of checks' timelines (check_run) deleted row by row (a dropped month's not counted)
  std::int64_t flow_figures = 0;  // counts of deferrals (flow_figure) of key values last deferred before the cut-off
};
// Removes history rows finished before `before`: drops the months wholly before it (the timeline's months
// with them), then deletes the older rows of the rest in batches of `batch`, each its own statement; and
// the timelines' runs, the deferrals flow limits recorded before it and their counts of key values last
// deferred before it, in batches too. Dead letters
// (failed, never retried) stay, a dropped month's included: purge_dead_letters removes them.
HistoryPurge purge_history(soci::session& db, TimePoint before, int batch);
// Deletes dead letters that finished before `before` in batches of `batch`; returns how many went.
std::int64_t purge_dead_letters(soci::session& db, TimePoint before, int batch);
// Deletes events emitted before `before` in batches of `batch`; returns how many went.
std::int64_t purge_events(soci::session& db, TimePoint before, int batch);

// The retention the schema owner sets once in prescient.settings (sql/0053); none: kept for ever.
struct Retention {
  std::optional<std::chrono::seconds> history;       // history_retention_seconds: history, timelines, deferrals
                                                     // and their counts
  std::optional<std::chrono::seconds> dead_letters;  // dead_letter_retention_seconds: failures never retried
  std::optional<std::chrono::seconds> events;        // event_retention_seconds: the outbox
};
Retention read_retention(soci::session& db);
// Whether this session's role may drop history partitions (it owns the schema's tables): retention's right.
// Runners' roles may make partitions, not drop them.
bool may_drop_history(soci::session& db);

struct RetentionRun {
  HistoryPurge history;
  std::int64_t dead_letters = 0;
  std::int64_t events = 0;
  std::int64_t idle_flow_rows = 0;  // flow control's state rows and places that held nothing
};
// Applies the database's retention at `now`: each table whose retention is set loses what is older
// (purge_history, purge_dead_letters, purge_events, in batches of `batch`); the others keep everything.
// Whatever the settings, flow control's rows that hold nothing go (db::forget_idle_flow_rows).
RetentionRun apply_retention(soci::session& db, TimePoint now, int batch);

namespace ops {
class Turns;  // internal (ops/turns.hpp): the thread and its connection
}

// The daemon's retention: a thread that applies the database's retention every `every` on a connection of
// its own, when that connection's role may drop partitions (it says once when it may not, and looks again
// at each turn). Failures are logged and tried again at the next turn. Stops when destroyed.
class RetentionKeeper {
 public:
  // REQUIRES: clock outlives the keeper.
  RetentionKeeper(std::string database_url, const Clock& clock, std::chrono::milliseconds every = std::chrono::hours{1});
  ~RetentionKeeper();
  RetentionKeeper(const RetentionKeeper&) = delete;
  RetentionKeeper& operator=(const RetentionKeeper&) = delete;

 private:
  // One turn on `db`: applies the retention if this role may; logs what went, or once that it may not.
  void turn(soci::session& db);

  const Clock& clock_;
  bool said_may_not_ = false;  // read and written by the turns' thread only
  std::unique_ptr<ops::Turns> turns_;
};

}  // namespace prescient
