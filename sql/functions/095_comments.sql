-- The schema explained where a reader of the database meets it: `\d+ prescient.future_job`, `\dt+
-- prescient.*`, pg_dump and every tool that shows pg_description. Kept with the function files, not in a
-- migration: like a function body this file is applied again whenever it changes, so a comment is
-- corrected without a migration, and a fresh database and an upgraded one read the same. A test fails
-- when a table or a column of the schema has no comment here (tests/db/schema_comments_test.cpp):
-- whoever adds a column in a migration adds its line below.

-- settings
COMMENT ON TABLE prescient.settings IS
  'One row: the database-wide settings. The slot resolution is fixed at creation (pending checks are stored on its grid); prescient settings shows them.';
COMMENT ON COLUMN prescient.settings.singleton IS 'Always true: the primary key that keeps this table at one row.';
COMMENT ON COLUMN prescient.settings.slot_seconds IS 'The slot resolution in seconds (a divisor of a day): every check time is rounded up to this grid. Fixed at migrate --slot.';
COMMENT ON COLUMN prescient.settings.max_horizon_seconds IS 'How far ahead a check may be scheduled or rescheduled; a later time is refused (and is a guard_horizon answer from a job).';
COMMENT ON COLUMN prescient.settings.max_checks IS 'The default guard: a check that has run this many times without finishing is stopped (outcome guard_max_checks). A job class may set its own.';
COMMENT ON COLUMN prescient.settings.max_attempts IS 'The default number of failed attempts in a row before a check is finished as failed (a dead letter). A job class may set its own.';
COMMENT ON COLUMN prescient.settings.job_timeout_seconds IS 'The default time one run of a job may take before it counts as a failed attempt. A job class may set its own.';
COMMENT ON COLUMN prescient.settings.created_at IS 'When the schema was created (the first migrate).';
COMMENT ON COLUMN prescient.settings.max_payload_bytes IS 'The largest payload a check or a schedule may carry, in bytes of JSON as PostgreSQL prints it (payload::text); a bigger one is refused at every enqueue (PR400). 2 MiB unless set.';
COMMENT ON COLUMN prescient.settings.workers_may_pin_clock IS 'Whether a worker''s calls may pin the clock (p_now): for test databases only. Off, a worker runs on the server''s clock and a p_now is refused (docs/workers.md, "What a worker may do"). The roles cannot write it.';
COMMENT ON COLUMN prescient.settings.history_retention_seconds IS 'How long history rows, the checks'' timelines (check_run) and flow limits'' deferrals are kept: older ones are removed hourly by the schema owner''s daemon (whole months dropped) or prescient purge --retention. Dead letters stay (dead_letter_retention_seconds). Null: kept for ever.';
COMMENT ON COLUMN prescient.settings.dead_letter_retention_seconds IS 'How long dead letters (failed, never retried) are kept; null: kept for ever, whatever history_retention_seconds says.';
COMMENT ON COLUMN prescient.settings.event_retention_seconds IS 'How long events stay in the outbox (by emitted_at); null: kept for ever. Longer than the slowest reader may lag.';

-- future_job
COMMENT ON TABLE prescient.future_job IS
  'Pending checks, and only pending checks: each sleeps here until next_check_at, a runner fires it at that slot and calls its job class, and a finished check moves to job_history. Written through prescient.schedule*, cancel and reschedule; claimed by runners with FOR UPDATE SKIP LOCKED.';
COMMENT ON COLUMN prescient.future_job.id IS 'The check''s id, drawn from an identity; it stays the check''s id in job_history and in event ids (<id>-<check_count>).';
COMMENT ON COLUMN prescient.future_job.job IS 'The job class that decides what the check does when it fires: a built-in class (noop, emit, sql, command, http, cron) or one from a plugin. Refused at enqueue unless registered.';
COMMENT ON COLUMN prescient.future_job.entity_name IS 'What the check is about, by kind (orders); with entity_key, the application''s own object. Lists and flow limits (key entity) select by it.';
COMMENT ON COLUMN prescient.future_job.entity_key IS 'Which one of entity_name (the order''s id, as text).';
COMMENT ON COLUMN prescient.future_job.job_key IS 'An optional natural key, unique among pending checks: a second schedule with the key is refused, kept, replaced, debounced or collected (on_conflict); a dedupe window looks it up in job_history.';
COMMENT ON COLUMN prescient.future_job.group_key IS 'Checks sharing a group key due at one slot run on one runner at a time, in id order (an advisory lock on the group). Null: no group.';
COMMENT ON COLUMN prescient.future_job.payload IS 'A JSON object handed to the job class. Classes keep their own state in it (the cron class its whole schedule); flow limits may key on a top-level field.';
COMMENT ON COLUMN prescient.future_job.first_check_at IS 'The slot of the check''s first firing, as scheduled.';
COMMENT ON COLUMN prescient.future_job.next_check_at IS 'The slot the check fires at next: always on the slot grid, never before. The runner''s lookup is an equality on it (index future_job_due).';
COMMENT ON COLUMN prescient.future_job.check_count IS 'Runs of the job that answered so far (a failed attempt is not one): the runs before the next. Guarded by max_checks.';
COMMENT ON COLUMN prescient.future_job.attempts IS 'Failed attempts since the last run that answered; at max_attempts the check finishes as failed. Reset by a successful run.';
COMMENT ON COLUMN prescient.future_job.last_error IS 'The last failed attempt''s error (at most 4 KB), with its SQLSTATE where the database refused; null after a successful run.';
COMMENT ON COLUMN prescient.future_job.asked_for_at IS 'The time the check was last asked for, before rounding to the grid: by its enqueue or reschedule, or by its last answer. Backoff, retry, windows and deferrals never move it. An answer after it is honoured even when already past (due at the next boundary); one at or before it ends the check guard_past. Null on rows older than migration 0033: read as first_check_at.';
COMMENT ON COLUMN prescient.future_job.max_checks IS 'The check''s own max_checks (set_check_policy; 0: no limit), over its class''s; null: the class''s.';
COMMENT ON COLUMN prescient.future_job.priority IS 'From 0 (first) to 9 (last), default 5: among the checks due at the same time, claims take the lower number first, then the lower id (docs/design.md, "Priorities").';
COMMENT ON COLUMN prescient.future_job.traceparent IS 'The W3C traceparent of the trace the check was created in (00-<trace id>-<parent id>-<flags>), or NULL: each run continues that trace with a span of its own (docs/design.md, "Trace context"). A schedule''s occurrence starts a trace of its own.';
COMMENT ON COLUMN prescient.future_job.tracestate IS 'The W3C tracestate that goes with traceparent (vendor=value,...), or NULL; an occurrence''s names its schedule and time (prescient=schedule:<id>;occurrence:<time>).';
COMMENT ON COLUMN prescient.future_job.max_attempts IS 'The check''s own max_attempts, over its class''s; null: the class''s.';
COMMENT ON COLUMN prescient.future_job.backoff_seconds IS 'The check''s own first retry wait, in seconds, over its class''s; null: the class''s.';
COMMENT ON COLUMN prescient.future_job.backoff_max_seconds IS 'The check''s own longest retry wait, in seconds, over its class''s; null: the class''s.';
COMMENT ON COLUMN prescient.future_job.enqueued_on IS 'When the check was first enqueued. A replace or debounce keeps it, so a debounce''s ceiling is enqueued_on + max_wait.';
COMMENT ON COLUMN prescient.future_job.enqueued_by IS 'Who enqueued it: the --by name, else the database role.';
COMMENT ON COLUMN prescient.future_job.claimed_by IS 'The runner holding a written lease on the check (long-running classes, flow-control deferrals); null when it is held by a row lock alone or not at all.';
COMMENT ON COLUMN prescient.future_job.claimed_until IS 'When the written lease expires: after it the check is claimable again, and a late result is discarded.';
COMMENT ON COLUMN prescient.future_job.claim_token IS 'A random token of the written lease: a settlement writes only rows whose token is still its own and whose lease is live (fencing).';
COMMENT ON COLUMN prescient.future_job.collects IS 'True for a digest (on_conflict collect): its payload is {"collected": [...]}, the payloads of its key''s enqueues in arrival order, so a user payload with a key "collected" is never taken for a list (docs/concepts.md, "Digests").';
COMMENT ON COLUMN prescient.future_job.collect_since IS 'A digest''s: when the first payload of its list arrived, the start of its ceiling (max_wait); null while the list is empty (a run consumed it).';
COMMENT ON COLUMN prescient.future_job.collect_pending IS 'A digest''s: the payloads (a JSON array) that arrived while a run held the check under a written lease; its settlement hands them to the next run, or to a new check when it ends the check (sql/functions/042_collect.sql). Null: none.';
COMMENT ON COLUMN prescient.future_job.calendar IS 'The calendar whose open time the check is timed in (docs/business-time.md), or NULL for elapsed time: its next_check_at was computed from asked-for time and business_delay in it. A reschedule clears it.';
COMMENT ON COLUMN prescient.future_job.calendar_version IS 'The version of the calendar that computed the check''s time (prescient.calendar_version): a later version changes times computed after it only.';
COMMENT ON COLUMN prescient.future_job.business_delay IS 'The business delay asked for, as written (4h, 3bd), counted in the calendar''s open time; NULL with a calendar: at the time asked for, or the next opening.';
COMMENT ON COLUMN prescient.future_job.collect_pending_since IS 'When the first of collect_pending arrived: the start of their ceiling.';
COMMENT ON COLUMN prescient.future_job.collect_pending_at IS 'The time collect_pending asks for (the debounce rule from their first arrival): a settlement that goes on is due no later, and a new check made of them is due then.';

-- job_history
COMMENT ON TABLE prescient.job_history IS
  'Every finished check, one row a settlement: the timeline of each check, with how it ended. Partitioned by month of finished_at, so retention drops whole months. A failed row not retried is a dead letter, kept by retention unless dead_letter_retention_seconds is set.';
COMMENT ON COLUMN prescient.job_history.history_id IS 'The row''s own id, in the order rows were written.';
COMMENT ON COLUMN prescient.job_history.id IS 'The check''s id (future_job.id): a retried check has several rows under one id.';
COMMENT ON COLUMN prescient.job_history.job IS 'The check''s job class.';
COMMENT ON COLUMN prescient.job_history.entity_name IS 'What the check was about, by kind.';
COMMENT ON COLUMN prescient.job_history.entity_key IS 'Which one of entity_name.';
COMMENT ON COLUMN prescient.job_history.job_key IS 'The check''s natural key, if it had one: dedupe windows and prescient show --job-key read it.';
COMMENT ON COLUMN prescient.job_history.group_key IS 'The check''s group, if it had one.';
COMMENT ON COLUMN prescient.job_history.payload IS 'The check''s payload as it finished (with the cron class''s bookkeeping, or why it was skipped or cancelled).';
COMMENT ON COLUMN prescient.job_history.first_check_at IS 'The slot of its first firing.';
COMMENT ON COLUMN prescient.job_history.last_check_at IS 'The slot it last fired at (for a cancelled check, the slot it was waiting for).';
COMMENT ON COLUMN prescient.job_history.check_count IS 'How many runs had answered when it finished.';
COMMENT ON COLUMN prescient.job_history.attempts IS 'Failed attempts in a row when it finished (max_attempts for a failed check).';
COMMENT ON COLUMN prescient.job_history.last_error IS 'The last error: why a failed check failed, or why a guard stopped it.';
COMMENT ON COLUMN prescient.job_history.enqueued_on IS 'When the check was first enqueued.';
COMMENT ON COLUMN prescient.job_history.enqueued_by IS 'Who enqueued it.';
COMMENT ON COLUMN prescient.job_history.finished_at IS 'When it finished, by the settling runner''s clock (or the canceller''s): the partition key.';
COMMENT ON COLUMN prescient.job_history.finished_by IS 'Who finished it: the runner''s id, or the --by name of a cancel.';
COMMENT ON COLUMN prescient.job_history.run_micros IS 'How long the last run took, in microseconds; null when it did not run (cancelled, skipped).';
COMMENT ON COLUMN prescient.job_history.retried IS 'True on a failed row whose check was put back by prescient retry (or the dashboard): no longer a dead letter.';
COMMENT ON COLUMN prescient.job_history.asked_for_at IS 'The pending check''s asked-for time when it ended (future_job.asked_for_at): prescient retry puts it back with it.';
COMMENT ON COLUMN prescient.job_history.max_checks IS 'The check''s own max_checks when it ended (future_job.max_checks).';
COMMENT ON COLUMN prescient.job_history.max_attempts IS 'The check''s own max_attempts when it ended.';
COMMENT ON COLUMN prescient.job_history.backoff_seconds IS 'The check''s own first retry wait when it ended, in seconds.';
COMMENT ON COLUMN prescient.job_history.backoff_max_seconds IS 'The check''s own longest retry wait when it ended, in seconds.';
COMMENT ON COLUMN prescient.job_history.result IS 'What the last run returned besides its answer (any JSON, at most 64 KiB as jsonb text: a class''s JobResult::result, an http answer''s result, a command''s JSON answer, a worker''s through prescient.worker_complete), or NULL (docs/design.md, "Results").';
COMMENT ON COLUMN prescient.job_history.priority IS 'The check''s priority (future_job.priority); a retry puts it back with it.';
COMMENT ON COLUMN prescient.job_history.traceparent IS 'The check''s trace context (future_job.traceparent); a retry puts it back with it.';
COMMENT ON COLUMN prescient.job_history.tracestate IS 'The tracestate that went with it (future_job.tracestate).';
COMMENT ON COLUMN prescient.job_history.collects IS 'True for a digest (future_job.collects): its payload is {"collected": [...]}, the payloads its last run read; a retry puts it back as one.';
COMMENT ON COLUMN prescient.job_history.collect_pending IS 'A digest''s payloads that arrived during its last run (future_job.collect_pending): a new check took them when it ended any way but cancelled; a cancelled one keeps them only here.';
COMMENT ON COLUMN prescient.job_history.calendar IS 'The calendar its last time was computed in (future_job.calendar), or NULL.';
COMMENT ON COLUMN prescient.job_history.calendar_version IS 'The version of it that computed that time (future_job.calendar_version).';
COMMENT ON COLUMN prescient.job_history.business_delay IS 'The business delay asked for (future_job.business_delay).';

-- cron_schedule
COMMENT ON TABLE prescient.cron_schedule IS
  'Recurring schedules. Each live schedule owns one pending check of class cron (job_key cron:<id>) that carries its whole definition in its payload, so firing reads nothing else; this row is the definition of record and what cron list shows. Written through prescient.cron_* functions.';
COMMENT ON COLUMN prescient.cron_schedule.id IS 'The schedule''s name, chosen by its author: unique, and the source of its events.';
COMMENT ON COLUMN prescient.cron_schedule.spec IS 'When it fires: a cron expression (five or six fields, cronie''s syntax) or @hourly, @daily, ..., @every DURATION.';
COMMENT ON COLUMN prescient.cron_schedule.time_zone IS 'The IANA time zone the spec is read in (cronie''s rule across DST changes).';
COMMENT ON COLUMN prescient.cron_schedule.job IS 'What an occurrence does: emit (an event into the outbox) or a job class that gets a check of its own per occurrence.';
COMMENT ON COLUMN prescient.cron_schedule.payload IS 'The event''s payload (emit), or the payload of each occurrence''s check.';
COMMENT ON COLUMN prescient.cron_schedule.deadline_seconds IS 'An occurrence fired later than this after its time is not run but recorded as deadline_missed; null: no deadline.';
COMMENT ON COLUMN prescient.cron_schedule.catch_up IS 'After downtime, the missed occurrences fire: one (the latest), all, or none.';
COMMENT ON COLUMN prescient.cron_schedule.version IS 'Raised by every update: an occurrence fires under exactly one version.';
COMMENT ON COLUMN prescient.cron_schedule.anchor_at IS 'Where @every intervals count from: the schedule''s creation.';
COMMENT ON COLUMN prescient.cron_schedule.created_at IS 'When it was added.';
COMMENT ON COLUMN prescient.cron_schedule.updated_at IS 'When it was last added, updated, paused or resumed.';
COMMENT ON COLUMN prescient.cron_schedule.last_occurrence_at IS 'The last occurrence reached, as of the last pause, update or backfill; while the schedule runs, its check''s payload is ahead of this.';
COMMENT ON COLUMN prescient.cron_schedule.created_by IS 'The database role that added it.';
COMMENT ON COLUMN prescient.cron_schedule.paused_at IS 'When it was paused (its check cancelled, its place kept); null while it runs.';
COMMENT ON COLUMN prescient.cron_schedule.paused_by IS 'Who paused it.';
COMMENT ON COLUMN prescient.cron_schedule.invalid_reason IS 'Why the runner could not use the definition (a spec that never fires, a zone its tzdata lacks): its check finished and nothing retries until an update makes it valid. Null: valid.';
COMMENT ON COLUMN prescient.cron_schedule.window_seconds IS 'Spread: each occurrence fires at the schedule''s own place within this window after its time, so many schedules of one spec do not fire as a herd. Null: none.';
COMMENT ON COLUMN prescient.cron_schedule.jitter_seconds IS 'Each occurrence fires at an offset of its own within this many seconds after its time, from the schedule''s id and the occurrence. Null: none.';
COMMENT ON COLUMN prescient.cron_schedule.overlap IS 'What an occurrence does while an earlier one''s check is pending or running: allow, skip, buffer_one (one running and one waiting) or cancel_previous.';
COMMENT ON COLUMN prescient.cron_schedule.start_at IS 'No occurrence before this fires. Null: from its creation.';
COMMENT ON COLUMN prescient.cron_schedule.end_at IS 'No occurrence after this fires; then the schedule ends by itself. Null: no end.';
COMMENT ON COLUMN prescient.cron_schedule.max_runs IS 'At most this many occurrences fire; then the schedule ends by itself. Null: no limit.';
COMMENT ON COLUMN prescient.cron_schedule.priority IS 'The priority of the schedule''s check and of every check its occurrences make (0 first to 9 last, default 5).';
COMMENT ON COLUMN prescient.cron_schedule.dst_repeated IS 'A local time that occurs twice, when the clocks go back: fire at the first of its instants, the last, both or none; auto: both for a spec with * first in its minute or hour field, else the first (docs/schedules.md, "Daylight saving time").';
COMMENT ON COLUMN prescient.cron_schedule.dst_missing IS 'A local time that does not occur, when the clocks go forward: shift (read at the offset before the change, so the gap''s length later on the new clock) or skip; auto: skip for a spec with * first in its minute or hour field, else the first instant after the gap.';
COMMENT ON COLUMN prescient.cron_schedule.calendar IS 'The calendar the schedule is bound to: its occurrences fire only in the calendar''s open time (docs/schedules.md, "Bound to a calendar"); NULL: unbound.';
COMMENT ON COLUMN prescient.cron_schedule.when_closed IS 'A bound schedule''s occurrence in the calendar''s closed time: skip it, or move it to the next opening, where the occurrences moved there fire once.';
COMMENT ON COLUMN prescient.cron_schedule.pause_after_failures IS 'Pause the schedule when this many of the checks its occurrences make end failed in a row (docs/schedules.md, "Pause after failures"); null: never.';
COMMENT ON COLUMN prescient.cron_schedule.failed_in_a_row IS 'How many of the checks its occurrences made ended failed in a row, counted while it has a pause_after_failures and is not paused; a done or a resume sets it back to 0.';
COMMENT ON COLUMN prescient.cron_schedule.last_failure IS 'The error of the last occurrence check counted as failed (cleared by a resume).';
COMMENT ON COLUMN prescient.cron_schedule.run_count IS 'Occurrences counted towards max_runs, as of the last pause or update; while it runs, its check''s payload counts on.';
COMMENT ON COLUMN prescient.cron_schedule.ended_at IS 'When the schedule ended by itself (end_at or max_runs reached); the row is kept. Null: not ended.';
COMMENT ON COLUMN prescient.cron_schedule.ended_reason IS 'Why it ended: which bound it reached.';
COMMENT ON COLUMN prescient.cron_schedule.pause_note IS 'The note given with the pause (why, until when); cleared by resume.';

-- event
COMMENT ON TABLE prescient.event IS
  'The outbox: events emitted by checks and schedules, inserted in the transaction of the settlement that produced them, with NOTIFY prescient_event. Read in (tx, seq) order, only from transactions older than the reader''s snapshot xmin.';
COMMENT ON COLUMN prescient.event.seq IS 'The order of insertion; with tx, the reading order.';
COMMENT ON COLUMN prescient.event.id IS 'Deterministic: <schedule id>-<occurrence unix seconds>, or <check id>-<check_count>[-n]. A duplicate is ignored, so a re-run never emits twice.';
COMMENT ON COLUMN prescient.event.type IS 'What happened, named by the application (order.late).';
COMMENT ON COLUMN prescient.event.source IS 'The schedule id, or the check id, that emitted it.';
COMMENT ON COLUMN prescient.event.occurred_at IS 'The occurrence time (schedules) or the slot (checks); an event may give its own.';
COMMENT ON COLUMN prescient.event.emitted_at IS 'When the runner settled it, by its clock; retention deletes by it.';
COMMENT ON COLUMN prescient.event.payload IS 'The event''s JSON payload.';
COMMENT ON COLUMN prescient.event.tx IS 'The inserting transaction (xid8): readers take only events whose transaction finished before their snapshot, so a late commit never lands behind a reader''s cursor.';
COMMENT ON COLUMN prescient.event.traceparent IS 'The traceparent of the run that published the event (the check''s trace, the run''s span as parent), or NULL: a consumer continues that trace.';

-- role_grant
COMMENT ON TABLE prescient.role_grant IS
  'The grants of the roles prescient_client and prescient_runner, one statement a row, granted again by regrant_roles() at every migrate. Written by migrations only.';
COMMENT ON COLUMN prescient.role_grant.statement IS 'A GRANT statement, run as it stands.';
COMMENT ON COLUMN prescient.role_grant.added_by IS 'The number of the migration that added it.';

-- paused_job
COMMENT ON TABLE prescient.paused_job IS
  'Paused job classes: runners claim none of their checks, which stay pending until prescient jobs resume.';
COMMENT ON COLUMN prescient.paused_job.job IS 'The paused class.';
COMMENT ON COLUMN prescient.paused_job.paused_at IS 'When it was paused.';
COMMENT ON COLUMN prescient.paused_job.paused_by IS 'Who paused it.';

-- check_run
COMMENT ON TABLE prescient.check_run IS
  'The timeline of a check: one row for each run that left it pending (a next time, a retry), written by the settlement. The run that ends a check is its history row; a deferral by a flow limit is a row of flow_deferral. Partitioned by month of finished_at with job_history, and purged with it.';
COMMENT ON COLUMN prescient.check_run.id IS 'The check (future_job.id, then job_history.id).';
COMMENT ON COLUMN prescient.check_run.calendar IS 'A run answered in business time: the calendar its next time was counted in (prescient.runs_timed_by, after the settlement); NULL otherwise.';
COMMENT ON COLUMN prescient.check_run.calendar_version IS 'The version of that calendar that computed the next time.';
COMMENT ON COLUMN prescient.check_run.business_delay IS 'The open time the answer asked for (4h, 3bd).';
COMMENT ON COLUMN prescient.check_run.run_result IS 'What the run returned besides its answer (any JSON, at most 64 KiB as jsonb text: a class''s JobResult::result, an http answer''s result, a command''s JSON answer, a worker''s), or NULL.';
COMMENT ON COLUMN prescient.check_run.due_at IS 'The time the run was for: its slot, or a time within it flow control gave.';
COMMENT ON COLUMN prescient.check_run.finished_at IS 'When its settlement was written, by the runner''s clock.';
COMMENT ON COLUMN prescient.check_run.run_micros IS 'How long the job took, in microseconds.';
COMMENT ON COLUMN prescient.check_run.runner IS 'The runner that ran it.';
COMMENT ON COLUMN prescient.check_run.result IS 'rescheduled: the job answered a next time; retried: the run failed and will be tried again.';
COMMENT ON COLUMN prescient.check_run.next_check_at IS 'The slot the check was put at.';
COMMENT ON COLUMN prescient.check_run.answered_at IS 'The next time the job answered, as given (rescheduled only).';
COMMENT ON COLUMN prescient.check_run.check_count IS 'The check''s successful runs after this one.';
COMMENT ON COLUMN prescient.check_run.attempts IS 'Failed attempts in a row after this one (0 after a success).';
COMMENT ON COLUMN prescient.check_run.error IS 'Why the run failed (retried only).';

-- job_class
COMMENT ON TABLE prescient.job_class IS
  'The one registry of job classes: migrate declares the built-in ones, runners the ones they load, workers theirs; enqueue refuses a class that is not here. A row stays until prescient jobs forget. Its policy columns are the class''s policy as anyone may set it; null: not set here (the class''s coded policy, the config file, then the settings decide).';
COMMENT ON COLUMN prescient.job_class.job IS 'The class''s name, as checks name it.';
COMMENT ON COLUMN prescient.job_class.runs_in IS 'runner: the C++ runner runs its checks; worker: workers in another language pull them.';
COMMENT ON COLUMN prescient.job_class.origin IS 'built-in, the plugin file that declared it, worker, or declared (ahead of the runner that will load it).';
COMMENT ON COLUMN prescient.job_class.declared_at IS 'When it was first declared.';
COMMENT ON COLUMN prescient.job_class.declared_by IS 'Who declared it first (a runner id, a user).';
COMMENT ON COLUMN prescient.job_class.seen_at IS 'When a runner or worker last declared it.';
COMMENT ON COLUMN prescient.job_class.max_checks IS 'How many times a check may run before asking again ends it guard_max_checks; 0: no limit (the horizon guards); null: not set here.';
COMMENT ON COLUMN prescient.job_class.max_attempts IS 'Failed attempts in a row before the check ends failed (a dead letter); null: not set here.';
COMMENT ON COLUMN prescient.job_class.backoff_seconds IS 'The wait before the first retry, doubling each attempt, rounded up to the grid; null: not set here (one slot).';
COMMENT ON COLUMN prescient.job_class.backoff_max_seconds IS 'The longest wait between two attempts; null: not set here (a day).';
COMMENT ON COLUMN prescient.job_class.timeout_seconds IS 'How long one run may take; null: not set here.';
COMMENT ON COLUMN prescient.job_class.policy_updated_at IS 'When its policy was last set.';
COMMENT ON COLUMN prescient.job_class.policy_updated_by IS 'Who set its policy last.';

-- queue_figures, pending_figure, finished_figure
COMMENT ON TABLE prescient.queue_figures IS
  'One row: figures of the whole queue, counted in the background by refresh_queue_figures(), so that stats, metrics and the dashboard read a few small rows instead of counting on every request.';
COMMENT ON COLUMN prescient.queue_figures.singleton IS 'Always true: keeps this table at one row.';
COMMENT ON COLUMN prescient.queue_figures.counted_at IS 'The time the figures describe.';
COMMENT ON COLUMN prescient.queue_figures.current_slot IS 'The slot of counted_at.';
COMMENT ON COLUMN prescient.queue_figures.count_millis IS 'How long the count took on the server, in milliseconds.';
COMMENT ON COLUMN prescient.queue_figures.pending IS 'Pending checks.';
COMMENT ON COLUMN prescient.queue_figures.overdue IS 'Pending checks due at a slot before current_slot.';
COMMENT ON COLUMN prescient.queue_figures.due IS 'Pending checks due at current_slot.';
COMMENT ON COLUMN prescient.queue_figures.next_hour IS 'Pending checks due after current_slot, up to an hour after it.';
COMMENT ON COLUMN prescient.queue_figures.next_day IS 'Then up to a day after it.';
COMMENT ON COLUMN prescient.queue_figures.next_week IS 'Then up to a week after it.';
COMMENT ON COLUMN prescient.queue_figures.dead_letters IS 'Checks failed in the 30 days before counted_at and not put back.';
COMMENT ON COLUMN prescient.queue_figures.finished_last_hour IS 'Checks settled in the hour before counted_at, by outcome: {"done": n, ...}.';
COMMENT ON COLUMN prescient.queue_figures.history_final_before IS 'Hours of finished_figure before this are final and not counted again.';
COMMENT ON COLUMN prescient.queue_figures.far_counted_at IS 'When the checks due after far_from were last counted.';
COMMENT ON COLUMN prescient.queue_figures.far_from IS 'Checks due after this are counted ten times less often.';
COMMENT ON COLUMN prescient.queue_figures.newest_check_id IS 'The highest future_job id when the count began (0: none): a check with a higher one was enqueued since, and stats counts again.';

COMMENT ON TABLE prescient.pending_figure IS
  'Pending checks by when they are due, by job class: per slot for the 1 000 slots after the current one, then per hour up to a day ahead, per day up to a year, and the rest in one bucket. Counted with queue_figures; the dashboard''s future view.';
COMMENT ON COLUMN prescient.pending_figure.bucket IS 'overdue, due, slot, hour, day or later.';
COMMENT ON COLUMN prescient.pending_figure.starts_at IS 'The slot, hour or day (UTC) the bucket starts at; null for overdue and later.';
COMMENT ON COLUMN prescient.pending_figure.job IS 'The job class.';
COMMENT ON COLUMN prescient.pending_figure.checks IS 'Pending checks of the class in the bucket.';

COMMENT ON TABLE prescient.finished_figure IS
  'Checks settled per hour of the last day, by outcome, with how late they settled (finished_at minus their slot). Counted with queue_figures; the dashboard''s past view.';
COMMENT ON COLUMN prescient.finished_figure.hour IS 'The hour (UTC).';
COMMENT ON COLUMN prescient.finished_figure.outcome IS 'The outcome, as in job_history.';
COMMENT ON COLUMN prescient.finished_figure.checks IS 'Checks settled with that outcome in that hour.';
COMMENT ON COLUMN prescient.finished_figure.lateness_p50_seconds IS 'The median lateness in seconds; null when none ran.';
COMMENT ON COLUMN prescient.finished_figure.lateness_p99_seconds IS 'The 99th percentile of lateness in seconds; null when none ran.';

-- runner_seen
COMMENT ON TABLE prescient.runner_seen IS
  'Which runners are firing: each writes its row once per slot it completes (record_runner_seen), so one that stopped shows by falling behind. Forgotten after a week unseen.';
COMMENT ON COLUMN prescient.runner_seen.runner_id IS 'The runner''s id (--runner-id; hostname:pid by default).';
COMMENT ON COLUMN prescient.runner_seen.shard IS 'The shard it fires: I/N (0/1 for all).';
COMMENT ON COLUMN prescient.runner_seen.first_seen_at IS 'Its first slot since it was last forgotten.';
COMMENT ON COLUMN prescient.runner_seen.last_slot IS 'The last slot it completed.';
COMMENT ON COLUMN prescient.runner_seen.seen_at IS 'When it completed that slot, by its own clock.';
COMMENT ON COLUMN prescient.runner_seen.claimed IS 'Checks it claimed in that slot.';

-- flow control
COMMENT ON TABLE prescient.flow_limit IS
  'Flow limits: the checks a limit applies to share a key computed from the row, and each key value has a budget of its own (rate, concurrency, fair share), held across every runner. Written through limit_set and limit_remove (prescient limits).';
COMMENT ON COLUMN prescient.flow_limit.name IS 'The limit''s name, chosen by the operator.';
COMMENT ON COLUMN prescient.flow_limit.key IS 'What the budget is per: job, entity_name, http_target, or payload.<field> (a top-level payload field).';
COMMENT ON COLUMN prescient.flow_limit.job IS 'Only checks of this class; null: every class.';
COMMENT ON COLUMN prescient.flow_limit.key_value IS 'Only this key value; null: each value has a budget of its own.';
COMMENT ON COLUMN prescient.flow_limit.rate IS 'At most this many checks started per per_seconds per key value; null: no rate.';
COMMENT ON COLUMN prescient.flow_limit.per_seconds IS 'The rate''s period in seconds.';
COMMENT ON COLUMN prescient.flow_limit.burst IS 'How many may start at once after a pause (the bucket''s size).';
COMMENT ON COLUMN prescient.flow_limit.concurrency IS 'At most this many running at once per key value; null: no limit.';
COMMENT ON COLUMN prescient.flow_limit.fair_share IS 'Within a slot, claims take the key values in turn (payload fields only).';
COMMENT ON COLUMN prescient.flow_limit.updated_at IS 'When it was last set.';
COMMENT ON COLUMN prescient.flow_limit.updated_by IS 'Who set it.';
COMMENT ON COLUMN prescient.flow_limit.weights IS 'Fair share''s weights by key value ({"gold": 3}); a value not named weighs 1. Null: equal shares.';

COMMENT ON TABLE prescient.flow_state IS
  'Per limit and key value, the rate''s state (GCRA). Its row is also the lock that serialises admissions of that key value. Written by runners.';
COMMENT ON COLUMN prescient.flow_state.limit_name IS 'The limit.';
COMMENT ON COLUMN prescient.flow_state.key_value IS 'The key value.';
COMMENT ON COLUMN prescient.flow_state.tat IS 'The theoretical arrival time: the next check may start at tat - (burst - 1) * interval.';

COMMENT ON TABLE prescient.flow_lease IS
  'Checks admitted under a concurrency limit: a place is held while the check''s future_job row keeps the written lease it was admitted with. A settlement, a release or an expired lease gives the place back; stale rows are dropped by the next admission of the key value.';
COMMENT ON COLUMN prescient.flow_lease.limit_name IS 'The limit.';
COMMENT ON COLUMN prescient.flow_lease.key_value IS 'The key value.';
COMMENT ON COLUMN prescient.flow_lease.check_id IS 'The admitted check (future_job.id).';

COMMENT ON TABLE prescient.flow_deferral IS
  'Each time a limit held a check back: when, why and until when. A check''s first deferral by a limit is recorded, not every look again while it waits. prescient show lists a check''s deferrals; retention removes them with the history.';
COMMENT ON COLUMN prescient.flow_deferral.check_id IS 'The deferred check (future_job.id, then job_history.id).';
COMMENT ON COLUMN prescient.flow_deferral.deferred_at IS 'When it was held back.';
COMMENT ON COLUMN prescient.flow_deferral.limit_name IS 'The limit that held it back.';
COMMENT ON COLUMN prescient.flow_deferral.key_value IS 'Its key value under that limit.';
COMMENT ON COLUMN prescient.flow_deferral.until IS 'The moment its budget allowed it to start.';

COMMENT ON TABLE prescient.flow_figure IS
  'Deferrals counted per limit and key value, for stats, metrics and the dashboard.';
COMMENT ON COLUMN prescient.flow_figure.limit_name IS 'The limit.';
COMMENT ON COLUMN prescient.flow_figure.key_value IS 'The key value.';
COMMENT ON COLUMN prescient.flow_figure.deferred IS 'Checks deferred so far.';
COMMENT ON COLUMN prescient.flow_figure.last_deferred_at IS 'The last deferral.';

-- what migrate applied
COMMENT ON TABLE prescient.schema_migrations IS
  'The numbered migrations (sql/NNNN_*.sql) applied to this database, with their checksums: an applied file is never edited, and a runner refuses a database behind its own.';
COMMENT ON COLUMN prescient.schema_migrations.version IS 'The migration''s number.';
COMMENT ON COLUMN prescient.schema_migrations.name IS 'Its file name.';
COMMENT ON COLUMN prescient.schema_migrations.checksum IS 'The checksum of the file as applied.';
COMMENT ON COLUMN prescient.schema_migrations.applied_at IS 'When it was applied.';

COMMENT ON TABLE prescient.schema_functions IS
  'The function files (sql/functions/*.sql) applied to this database, with their checksums: migrate applies a file again when it changed; every other command compares them with its own.';
COMMENT ON COLUMN prescient.schema_functions.name IS 'The file''s name.';
COMMENT ON COLUMN prescient.schema_functions.checksum IS 'The checksum of the file as applied.';
COMMENT ON COLUMN prescient.schema_functions.applied_at IS 'When it was last applied.';

-- calendars (business time, 086)
COMMENT ON TABLE prescient.calendar IS
  'A calendar for business time, as it is now: its zone and definition (opening hours, holidays, special days). Set with prescient.calendar_set.';
COMMENT ON COLUMN prescient.calendar.name IS 'The calendar''s name, chosen by its author (the naming rule of prescient.name_problem).';
COMMENT ON COLUMN prescient.calendar.version IS 'Its version: 1 when made, one more each time it is set again.';
COMMENT ON COLUMN prescient.calendar.time_zone IS 'The IANA time zone its hours are read in.';
COMMENT ON COLUMN prescient.calendar.definition IS 'Its definition as set: {"hours": {"mon": ["09:00-17:00"], ...}, "holidays": [...], "days": [{"date": ..., "hours": [...]}]}.';
COMMENT ON COLUMN prescient.calendar.changed_at IS 'When it was last set.';
COMMENT ON COLUMN prescient.calendar.changed_by IS 'Who last set it.';
COMMENT ON TABLE prescient.calendar_version IS 'Every version of every calendar, as it was set: a time computed from a calendar can name the version that computed it.';
COMMENT ON COLUMN prescient.calendar_version.calendar IS 'The calendar.';
COMMENT ON COLUMN prescient.calendar_version.version IS 'The version.';
COMMENT ON COLUMN prescient.calendar_version.time_zone IS 'Its time zone in that version.';
COMMENT ON COLUMN prescient.calendar_version.definition IS 'Its definition in that version.';
COMMENT ON COLUMN prescient.calendar_version.made_at IS 'When that version was set.';
COMMENT ON COLUMN prescient.calendar_version.made_by IS 'Who set it.';
COMMENT ON TABLE prescient.calendar_span IS 'When a calendar''s current version is open, as instants: one row per stretch of open time, made when it is set. Business arithmetic reads it.';
COMMENT ON COLUMN prescient.calendar_span.calendar IS 'The calendar.';
COMMENT ON COLUMN prescient.calendar_span.opens_at IS 'When the stretch opens.';
COMMENT ON COLUMN prescient.calendar_span.closes_at IS 'When it closes (not open at that instant).';
COMMENT ON COLUMN prescient.calendar_span.open_before_us IS 'The calendar''s open time before this stretch, from the start of its range, in microseconds.';
COMMENT ON TABLE prescient.calendar_open_day IS 'The days (in the calendar''s zone) on which an interval of a calendar''s current version opens: what business days count.';
COMMENT ON COLUMN prescient.calendar_open_day.calendar IS 'The calendar.';
COMMENT ON COLUMN prescient.calendar_open_day.day IS 'An open day, in the calendar''s zone.';
COMMENT ON TABLE prescient.zone_offset IS 'A time zone''s offsets from UTC over the calendars'' range, as this server''s tzdata gives them: one row from each change to the next.';
COMMENT ON COLUMN prescient.zone_offset.time_zone IS 'The IANA time zone.';
COMMENT ON COLUMN prescient.zone_offset.starts_at IS 'The first instant with this offset.';
COMMENT ON COLUMN prescient.zone_offset.ends_at IS 'The first instant after it with another.';
COMMENT ON COLUMN prescient.zone_offset.offset_seconds IS 'The offset from UTC, in seconds (local = UTC + offset).';
COMMENT ON COLUMN prescient.zone_offset.first_pass_from IS 'The first instant of this stretch whose wall time was not seen before: after a change that sets the clock back by D, starts_at + D.';
