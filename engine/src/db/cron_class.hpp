#pragma once
// Internal: what the `cron` job class (jobs/cron_job.cpp) writes besides events and its check's payload,
// buffered with the check's settlement (JobContext::write), so they commit exactly when it does. Each is
// the exception, not the rule: a missed deadline, an occurrence of another class, an invalid definition.
#include <optional>
#include <span>
#include <string>

#include "prescient/job.hpp"
#include "prescient/time.hpp"

namespace prescient::db {

// An occurrence fired later than its deadline: a history row of its own ("deadline_missed"), made as every
// history row is (prescient.cron_occurrence_history, through prescient.history_row).
BufferedWrite deadline_missed(const Check& check, const std::string& schedule_id, const std::string& payload,
                              TimePoint occurrence, TimePoint now, const std::string& reason);
// An occurrence of a schedule of another class: a check of that class at the occurrence (kept if the
// job key exists already, so a re-run schedules nothing twice), under the schedule's overlap policy
// (prescient.cron_occurrence_overlapping, unless it is allow).
BufferedWrite schedule_occurrence(const Check& check, const std::string& job, const std::string& schedule_id,
                                  TimePoint occurrence, const std::string& job_key, const std::string& payload,
                                  const std::string& overlap, TimePoint now);
// The occurrences a backfill fires (prescient.cron_backfill_fire): checks of a class for those not run yet,
// and the live schedule moved past them.
BufferedWrite backfill_occurrences(const std::string& job, const std::string& schedule_id,
                                   std::span<const TimePoint> occurrences, const std::string& payload, TimePoint now);
// A bounded schedule that has run out (this version of it): it ends, with why, its run count and the last
// occurrence it fired kept in its row.
BufferedWrite end_schedule(const std::string& schedule_id, int version, const std::string& reason, int runs,
                           std::optional<TimePoint> last, TimePoint now);
// A definition the cron class cannot use (this version of it): the schedule is marked invalid, with why.
BufferedWrite mark_schedule_invalid(const std::string& schedule_id, int version, const std::string& reason);

}  // namespace prescient::db
