#pragma once
// Internal: what the `cron` job class (jobs/cron_job.cpp) writes besides events and its check's payload,
// buffered with the check's settlement (JobContext::write), so they commit exactly when it does. Each is
// the exception, not the rule: a missed deadline, an occurrence of another class, an invalid definition.
#include <optional>
#include <string>

#include "prescient/job.hpp"
#include "prescient/time.hpp"

namespace prescient::db {

// An occurrence fired later than its deadline: a history row of its own ("deadline_missed").
BufferedWrite deadline_missed(const Check& check, const std::string& schedule_id, const std::string& payload,
                              TimePoint occurrence, TimePoint now, const std::string& reason);
// An occurrence of a schedule of another class: a check of that class at the occurrence (kept if the
// job key exists already, so a re-run schedules nothing twice).
BufferedWrite schedule_occurrence(const std::string& job, const std::string& schedule_id, TimePoint occurrence,
                                  const std::string& job_key, const std::string& payload, TimePoint now);
// A definition the cron class cannot use (this version of it): the schedule is marked invalid, with why.
BufferedWrite mark_schedule_invalid(const std::string& schedule_id, int version, const std::string& reason);

}  // namespace prescient::db
