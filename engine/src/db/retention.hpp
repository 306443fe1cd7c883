#pragma once
// Internal: the statements of retention and of its upkeep (the functions they call are in
// sql/functions/080_history_partitions.sql, and flow control's in 085_flow_control.sql). The policy (whole months first, then batches; retrying a
// busy partition) is ops/retention.cpp's.
#include <cstdint>
#include <string>
#include <vector>

#include "prescient/time.hpp"

namespace soci {
class session;
}

namespace prescient::db {

// Makes the monthly history partitions from now's month through three months later; how many it made.
int create_history_partitions(soci::session& db, TimePoint now);
// The monthly history partitions that end at or before `before`, oldest first.
std::vector<std::string> history_months_before(soci::session& db, TimePoint before);
// Drops one monthly partition, keeping its dead letters; how many rows went. Fails with SQLSTATE 55P03 when its lock is busy.
std::int64_t drop_history_partition(soci::session& db, const std::string& name);
// One batch: deletes up to `limit` history rows finished before `before`, dead letters excepted; how many.
std::int64_t purge_history_rows(soci::session& db, TimePoint before, int limit);
// One batch: deletes up to `limit` dead letters (failures never retried) finished before `before`; how many.
std::int64_t purge_dead_letters(soci::session& db, TimePoint before, int limit);
// One batch: deletes up to `limit` events emitted before `before`; how many went.
std::int64_t purge_events(soci::session& db, TimePoint before, int limit);
// One batch: deletes up to `limit` records of flow limits' deferrals made before `before`; how many went.
std::int64_t purge_deferrals(soci::session& db, TimePoint before, int limit);
// Up to `limit` rows of the checks' timelines (check_run) finished before `before`; how many.
std::int64_t purge_check_runs(soci::session& db, TimePoint before, int limit);
// One batch: deletes up to `limit` counts of flow limits' deferrals (flow_figure) of key values last
// deferred before `before`; how many went.
std::int64_t purge_flow_figures(soci::session& db, TimePoint before, int limit);
// One batch: up to `limit` each of flow control's state rows and places that hold nothing at `now`
// (prescient.forget_idle_flow_rows, sql/functions/085_flow_control.sql); how many went.
std::int64_t forget_idle_flow_rows(soci::session& db, TimePoint now, int limit);

}  // namespace prescient::db
