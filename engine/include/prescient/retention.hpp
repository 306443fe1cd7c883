#pragma once
// Retention and the upkeep it relies on: job_history is partitioned by month (sql/0013), so purging it
// drops whole months and deletes rows only in the month the cut-off falls in; the event outbox is
// purged row by row (its ids must stay unique across all of it, which a partitioned table cannot
// enforce).
#include <cstdint>

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
};
// Removes history rows finished before `before`: drops the months wholly before it (the timeline's months
// with them), then deletes the older rows of the rest in batches of `batch`, each its own statement; and
// the timelines' runs and the deferrals flow limits recorded before it, in batches too.
HistoryPurge purge_history(soci::session& db, TimePoint before, int batch);
// Deletes events emitted before `before` in batches of `batch`; returns how many went.
std::int64_t purge_events(soci::session& db, TimePoint before, int batch);

}  // namespace prescient
