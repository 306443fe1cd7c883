#pragma once
// cron: the pending check of a recurring schedule (see prescient/schedules.hpp). At each run it reads
// its schedule and fires the occurrences due since the last one it handled, up to the current slot:
//  - occurrences of the current slot all fire, each with its own event id <schedule>-<unix seconds>;
//  - occurrences of earlier slots were missed (no runner ran): catch_up `one` fires the latest of them,
//    `all` every one (oldest first), `none` none;
//  - an occurrence fired later than the schedule's deadline after its time is skipped and recorded in
//    the history as `deadline_missed`.
// Then it looks again at the next occurrence (never computed from when it ran, so a late run does not
// shift the series); the last occurrence handled is written with the settlement. A check whose
// schedule was removed or updated (another version) finishes without firing.
// job `emit` publishes the schedule's payload (type: its "type" if a string, else "cron"); any other
// class gets a check of its own per occurrence (key cron:<schedule>:<unix seconds>), due at once.
#include "prescient/job.hpp"

namespace prescient {

class CronJob final : public JobExec {
 public:
  JobPolicy policy() const override;
  JobResult run(const Check& check, JobContext& ctx) override;
};

}  // namespace prescient
