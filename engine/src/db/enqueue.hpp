#pragma once
// Internal: the enqueue statements. Each calls the SQL function that holds its rules (slot rounding,
// horizon, windows, debounce and dedupe, key conflicts: sql/functions/030 to 060), so a C++ client enqueues
// by the same rules as any other caller, refused in the same words. The caller has resolved the times.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "prescient/client.hpp"

namespace soci {
class session;
}

namespace prescient::db {

// prescient.schedule(...): one check at `at`, enqueued by `by`. allow_unknown_class: p_allow_unknown_class.
Scheduled schedule_one(soci::session& db, const ScheduleRequest& request, TimePoint at, const std::string& by,
                       TimePoint now, bool allow_unknown_class);
// prescient.schedule_arrays(...): many checks in one statement, one array per field in binary; `at[i]` is
// request i's time, `by` the enqueuer of requests that name none. Results in request order.
std::vector<Scheduled> schedule_arrays(soci::session& db, std::span<const ScheduleRequest> requests,
                                       std::span<const TimePoint> at, const std::string& by, TimePoint now,
                                       bool report_conflicts, bool allow_unknown_class);
// prescient.schedule_problems(...): what schedule_arrays would refuse in each request, writing nothing; an
// entry per request, empty when it is good.
std::vector<std::optional<std::string>> schedule_problems(soci::session& db, std::span<const ScheduleRequest> requests,
                                                          std::span<const TimePoint> at, const std::string& by,
                                                          TimePoint now, bool allow_unknown_class);
// prescient.cancel(...), by id or job key: the cancelled check's id, or nothing when none was pending.
std::optional<std::int64_t> cancel(soci::session& db, std::optional<std::int64_t> id,
                                   std::optional<std::string> job_key, const std::string& by, TimePoint now);
// prescient.reschedule(...), by id or job key: the moved check, or nothing when none was pending.
std::optional<Rescheduled> reschedule(soci::session& db, TimePoint at, std::optional<std::int64_t> id,
                                      std::optional<std::string> job_key, TimePoint now);

}  // namespace prescient::db
