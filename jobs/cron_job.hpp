#pragma once
// cron: the pending check of a recurring schedule (see prescient/schedules.hpp). Its payload carries the
// whole definition (sql/functions/045_cron.sql, cron_check_payload), so a run reads nothing else. It
// fires the occurrences due since the last one it handled (or since an update or resume took effect), up
// to the current slot:
//  - occurrences of the current slot and of the one before it are on time and all fire, each with its own
//    event id <schedule>-<unix seconds> (one slot late is a busy runner or a racing update, not downtime);
//  - earlier ones were missed (no runner ran): catch_up `one` fires the latest of them, `all` every one
//    (oldest first), `none` none;
//  - an occurrence fired later than the schedule's deadline after its time is skipped and recorded in
//    the history as `deadline_missed`.
// Then it looks again at the next occurrence (never computed from when it ran, so a late run does not
// shift the series); the last occurrence handled goes into the check's payload (JobResult::payload_update), written by the
// settlement. Updates rewrite the check itself (in the transaction of the update), so a run never sees a
// stale definition. A definition it cannot use (a spec or zone SQL let through, a spec that never fires)
// marks the schedule invalid with the reason, and the check finishes.
// job `emit` publishes the schedule's payload (type: its "type" if a string, else "cron"); any other
// class gets a check of its own per occurrence (key cron:<schedule>:<unix seconds>), due at once.
// A schedule bound to a calendar fires only in its open time: an occurrence in closed time is skipped or
// moved to the next opening (prescient/calendar_binding.hpp), and a window or jitter counts open time.
#include "cron_calendars.hpp"
#include "prescient/job.hpp"

namespace prescient::jobs {

class CronJob final : public JobExec {
 public:
  JobPolicy policy() const override;
  JobResult run(const Check& check, JobContext& ctx) override;

 private:
  CronCalendars calendars_;
};

}  // namespace prescient::jobs
