#pragma once
// Internal: the statements on prescient.cron_schedule, the definitions of recurring schedules. Their
// rules (validation, arming the cron check) are Schedules' (api/schedules.cpp).
#include <optional>
#include <string>
#include <vector>

#include "prescient/schedules.hpp"

namespace soci {
class session;
}

namespace prescient::db {

// Inserts the definition (version 1, anchored at `now`); false when the id is taken.
bool insert_schedule(soci::session& db, const ScheduleDefinition& d, TimePoint now);
// Locks the schedule's row until the end of the transaction (so concurrent changes wait).
void lock_schedule(soci::session& db, const std::string& id);
// Writes the definition's changeable fields and bumps its version; the new version, or nothing when
// there is no such schedule.
std::optional<int> update_schedule(soci::session& db, const ScheduleDefinition& d, TimePoint now);
// Deletes it; false when there is no such schedule.
bool delete_schedule(soci::session& db, const std::string& id);
// The schedules (all, or the one with `id`), with the time of their pending cron check, by id.
std::vector<ScheduleDefinition> read_schedules(soci::session& db, const std::optional<std::string>& id);
// The schedule's most recent events, newest first.
std::vector<Schedules::FiredEvent> recent_schedule_events(soci::session& db, const std::string& id, int limit);

}  // namespace prescient::db
