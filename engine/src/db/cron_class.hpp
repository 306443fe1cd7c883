#pragma once
// Internal: what the `cron` job class (jobs/cron_job.cpp) reads and writes. The read runs on the job's
// own session (JobContext::db()); the writes are buffered with the check's settlement
// (JobContext::write), so they commit exactly when it does.
#include <optional>
#include <string>

#include "prescient/job.hpp"
#include "prescient/time.hpp"

namespace soci {
class session;
}

namespace prescient::db {

// A schedule's definition as the cron class fires it, with the database's horizon.
struct CronDefinition {
  std::string spec, time_zone, job, payload, catch_up;  // payload: JSON text
  std::chrono::seconds deadline{0};                      // 0: none
  int version = 0;
  TimePoint anchor_at, last_occurrence_at;  // the last occurrence handled, or the anchor
  std::chrono::seconds max_horizon{0};
};
// The schedule `id`'s definition, or nothing when it was removed.
std::optional<CronDefinition> read_cron_definition(soci::session& db, const std::string& id);

// An occurrence fired later than its deadline: a history row of its own ("deadline_missed").
BufferedWrite deadline_missed(const Check& check, const std::string& schedule_id, const std::string& payload,
                              TimePoint occurrence, TimePoint now, const std::string& reason);
// An occurrence of a schedule of another class: a check of that class at the occurrence (kept if the
// job key exists already, so a re-run schedules nothing twice).
BufferedWrite schedule_occurrence(const std::string& job, const std::string& schedule_id, TimePoint occurrence,
                                  const std::string& job_key, const std::string& payload, TimePoint now);
// The last occurrence handled, unless the schedule was updated meanwhile (another version).
BufferedWrite record_last_occurrence(const std::string& schedule_id, int version, TimePoint last);

}  // namespace prescient::db
