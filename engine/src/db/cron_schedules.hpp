#pragma once
// Internal: the calls that change recurring schedules (the SQL API of sql/functions/045_cron.sql, the same
// any language uses) and the reads of prescient.cron_schedule. Their C++ rules (validation with the
// runner's own parser and tzdata, the first occurrence) are Schedules' (api/schedules.cpp).
#include <nlohmann/json.hpp>

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "prescient/schedules.hpp"

namespace soci {
class session;
}

namespace prescient::db {

// cron_add_arrays: all or nothing; first_check_at[i] is item i's first occurrence. Returns how many.
int add_schedules(soci::session& db, std::span<const ScheduleDefinition> items,
                  std::span<const std::optional<TimePoint>> first_check_at, TimePoint now);
// prescient.cron_problems(...): what cron_add_arrays would refuse in each definition (an id in use
// included), writing nothing; an element per item, nullopt for a good one.
std::vector<std::optional<std::string>> schedule_definition_problems(soci::session& db,
                                                                     std::span<const ScheduleDefinition> items,
                                                                     TimePoint now);
// Locks the schedule's row until the end of the transaction (so concurrent changes wait).
void lock_schedule(soci::session& db, const std::string& id);
// cron_update: `changes` holds the fields to change; returns the new version. NotFound, InvalidInput.
int update_schedule(soci::session& db, const std::string& id, const nlohmann::json& changes,
                    std::optional<int> expected_version, std::optional<TimePoint> first_check_at, TimePoint now);
// cron_remove. NotFound for an unknown id.
void remove_schedule(soci::session& db, const std::string& id, const std::string& by, TimePoint now);
// cron_pause / cron_resume: false when it was paused (resumed) already. NotFound for an unknown id.
bool pause_schedule(soci::session& db, const std::string& id, const std::string& by,
                    const std::optional<std::string>& note, TimePoint now);
// Arms a backfill of the range (cron_backfill); returns its check's id.
std::int64_t backfill_schedule(soci::session& db, const std::string& id, TimePoint from, TimePoint to,
                               const std::string& by, TimePoint now);
bool resume_schedule(soci::session& db, const std::string& id, const std::string& by, TimePoint now);
// Arms a trigger (cron_trigger): one occurrence out of the series; returns the occurrence's id.
std::string trigger_schedule(soci::session& db, const std::string& id, const std::string& by, TimePoint now);
// A page of schedules by id, with the time of their pending cron check.
std::vector<ScheduleDefinition> read_schedules(soci::session& db, const ScheduleFilter& filter);
std::optional<ScheduleDefinition> read_schedule(soci::session& db, const std::string& id);
// The schedule's most recent events, newest first.
std::vector<Schedules::FiredEvent> recent_schedule_events(soci::session& db, const std::string& id, int limit);

}  // namespace prescient::db
