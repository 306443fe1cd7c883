#pragma once
// Internal: every statement the runner's store runs (db/pg_runner_store.cpp runs them), each named once
// and written as it is sent but for its parameters, which the text names (:now) and a struct of values
// beside it sets by name (db/named_statement.hpp): a statement and its values cannot disagree on the
// order, and the unit tests bind every struct, so one that misses a name fails them. Time always comes in
// as a parameter (microseconds since the epoch); no statement asks the server for now().
#include <spdlog/fmt/fmt.h>

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "db/check_columns.hpp"
#include "db/named_statement.hpp"
#include "db/pq.hpp"
#include "runner/claim_mark.hpp"

namespace prescient::db::runner_sql {

// What a run needs of a claimed check (db/check_columns.hpp), read in binary, then the time it is due:
// its slot, or a time within the slot that flow control deferred it to. Its priority last, for the place of
// the claim's last row in claim order (runner/claim_mark.hpp).
// Then the time it was asked for (a row older than migration 0033 has none: its first check's), the
// check's own policy (sql/0037; NULL where not set), and the trace context this run sends on: the check's
// trace with a span id of the run's own (prescient.run_traceparent: each claim is one attempt), and its
// tracestate (docs/design.md, "Trace context").
inline const std::string kClaimColumns = check_column_list(true) +
                                         ", next_check_at, coalesce(asked_for_at, first_check_at), max_checks,"
                                         " max_attempts, backoff_seconds, backoff_max_seconds,"
                                         " prescient.run_traceparent(traceparent) AS run_traceparent, tracestate, priority";
inline constexpr int kDueColumn = kCheckColumnCount;
inline constexpr int kAskedForColumn = kCheckColumnCount + 1;
inline constexpr int kOwnPolicyColumn = kCheckColumnCount + 2;  // and the three after it
inline constexpr int kTraceparentColumn = kCheckColumnCount + 6;
inline constexpr int kTracestateColumn = kCheckColumnCount + 7;
inline constexpr int kPriorityColumn = kCheckColumnCount + 8;

// The classes no runner claims: the paused ones, and worker classes, whose checks workers in the
// application's own language take (docs/workers.md).
#define PRESCIENT_NOT_RUNNERS_CLASSES \
  "(SELECT job FROM prescient.paused_job UNION ALL SELECT job FROM prescient.job_class WHERE runs_in = 'worker')"

// Which rows of a slot a claim may take, and those the drain waits for: ungrouped, not under a live
// lease, not of an excluded class or id, not paused, not a worker class's.
inline constexpr std::string_view kClaimable = R"sql(group_key IS NULL
   AND (claimed_until IS NULL OR claimed_until <= prescient.at_us(:now))
   AND job <> ALL (:excluded_jobs::text[]) AND id <> ALL (:excluded_ids::bigint[])
   AND job NOT IN )sql" PRESCIENT_NOT_RUNNERS_CLASSES;

// The values of kClaimable.
struct Claimable {
  TimePoint now;
  const std::vector<std::string>& excluded_jobs;
  const std::vector<std::int64_t>& excluded_ids;
  void bind(pq::Binding& b) const {
    b.set("now", pq::micros(now)).set("excluded_jobs", pq::text_array(excluded_jobs));
    b.set("excluded_ids", pq::integer_array(excluded_ids));
  }
};

// The slot's own checks and those flow control deferred to a time within it: from the slot's boundary to
// its last microsecond, or earlier. In the order of the index future_job_due: by time, then priority (0
// first), then id (docs/design.md, "Priorities"); the index gives it, nothing is sorted. Only rows after a
// place in that order (runner/claim_mark.hpp): the index scan starts there.
inline const pq::NamedStatement kClaimDue(fmt::format(R"sql(
SELECT {columns}
  FROM prescient.future_job
 WHERE next_check_at BETWEEN prescient.at_us(:slot) AND prescient.at_us(:until)
   AND (next_check_at, priority, id) > (prescient.at_us(:after_due), :after_priority::smallint, :after_id::bigint)
   AND {claimable}
 ORDER BY next_check_at, priority, id
 LIMIT :limit
   FOR UPDATE SKIP LOCKED)sql",
                                                      fmt::arg("columns", kClaimColumns),
                                                      fmt::arg("claimable", kClaimable)));
struct ClaimDue {
  TimePoint slot, until;
  Claimable claimable;
  int limit;
  std::optional<runner::ClaimKey> after;  // none: from the slot's start
  void bind(pq::Binding& b) const {
    b.set("slot", pq::micros(slot)).set("until", pq::micros(until)).set("limit", std::to_string(limit));
    // The slot's start is after a time just before it.
    const runner::ClaimKey from = after.value_or(runner::ClaimKey{.due = slot - Micros{1}});
    b.set("after_due", pq::micros(from.due)).set("after_priority", std::to_string(from.priority));
    b.set("after_id", std::to_string(from.id));
    claimable.bind(b);
  }
};

// Fair share: the field's values at the slot, stepped through one index probe each (the index
// sync_fair_share_indexes makes: next_check_at, the value, priority, id), then each value's first checks
// by priority, as many as its weight's share of the limit, after the place in that value's order (priority,
// id) the runner's threads have claimed to (runner/claim_mark.hpp), where the index scan starts. Run
// unnamed, so the plan sees the field's name and uses that index. Each row ends with its value.
// The weights are a JSON object {"value": weight}, 1 for a value it does not name.
inline const pq::NamedStatement kClaimDueFair(fmt::format(R"sql(
WITH RECURSIVE v AS (
  (SELECT coalesce(payload ->> :field, '') AS value, 1 AS n
     FROM prescient.future_job
    WHERE next_check_at = prescient.at_us(:slot) AND group_key IS NULL
    ORDER BY 1 LIMIT 1)
  UNION ALL
  SELECT (SELECT coalesce(f.payload ->> :field, '')
            FROM prescient.future_job f
           WHERE f.next_check_at = prescient.at_us(:slot) AND f.group_key IS NULL
             AND coalesce(f.payload ->> :field, '') > v.value
           ORDER BY 1 LIMIT 1),
         v.n + 1
    FROM v WHERE v.value IS NOT NULL AND v.n < :limit),
vals AS (
  SELECT v.value, coalesce((:weights::jsonb ->> v.value)::bigint, 1) AS weight,
         coalesce(m.priority, -32768)::smallint AS after_priority, coalesce(m.id, 0) AS after_id
    FROM v LEFT JOIN unnest(:after_values::text[], :after_priorities::bigint[], :after_ids::bigint[])
                     AS m(value, priority, id) ON m.value = v.value
   WHERE v.value IS NOT NULL)
SELECT c.*, vals.value
  FROM vals, LATERAL (
    SELECT {columns}
      FROM prescient.future_job
     WHERE next_check_at = prescient.at_us(:slot) AND coalesce(payload ->> :field, '') = vals.value
       AND (priority, id) > (vals.after_priority, vals.after_id)
       AND {claimable}
     ORDER BY priority, id
     LIMIT greatest(1, :limit * vals.weight / (SELECT sum(weight) FROM vals))
       FOR UPDATE SKIP LOCKED) c
 LIMIT :limit)sql",
                                                          fmt::arg("columns", kClaimColumns),
                                                          fmt::arg("claimable", kClaimable)));
inline constexpr int kFairValueColumn = kPriorityColumn + 1;
struct ClaimDueFair {
  std::string field;
  TimePoint slot;
  int limit;
  std::string weights;
  Claimable claimable;
  const std::map<std::string, runner::ClaimKey>& after;  // by value; a value it does not name: from its start
  void bind(pq::Binding& b) const {
    b.set("field", field).set("slot", pq::micros(slot)).set("limit", std::to_string(limit)).set("weights", weights);
    claimable.bind(b);
    std::vector<std::string> values;
    std::vector<std::int64_t> priorities, ids;
    for (const auto& [value, key] : after) {
      values.push_back(value);
      priorities.push_back(key.priority);
      ids.push_back(key.id);
    }
    b.set("after_values", pq::text_array(values)).set("after_priorities", pq::integer_array(priorities));
    b.set("after_ids", pq::integer_array(ids));
  }
};

// Whole groups at the slot, each under a transaction's advisory lock, so one runner takes a group at a
// time. The lock is tried on distinct groups only (a volatile qual is not pushed below DISTINCT).
inline const pq::NamedStatement kClaimDueGroups(fmt::format(R"sql(
WITH mine AS (
  SELECT g.group_key
    FROM (SELECT DISTINCT group_key
            FROM prescient.future_job
           WHERE next_check_at = prescient.at_us(:slot) AND group_key IS NOT NULL
             AND group_key <> ALL (:excluded_groups::text[])) g
   WHERE pg_try_advisory_xact_lock(hashtextextended('prescient.group:' || g.group_key, 0))
   LIMIT :max_groups)
SELECT {columns}
  FROM prescient.future_job f
 WHERE f.next_check_at = prescient.at_us(:slot) AND f.group_key IN (SELECT group_key FROM mine)
   AND f.job <> ALL (:excluded_jobs::text[]) AND f.job NOT IN )sql" PRESCIENT_NOT_RUNNERS_CLASSES R"sql(
 ORDER BY f.group_key, f.id
   FOR UPDATE OF f)sql",
                                                            fmt::arg("columns", kClaimColumns)));
struct ClaimDueGroups {
  TimePoint slot;
  const std::vector<std::string>& excluded_groups;
  int max_groups;
  const std::vector<std::string>& excluded_jobs;
  void bind(pq::Binding& b) const {
    b.set("slot", pq::micros(slot)).set("excluded_groups", pq::text_array(excluded_groups));
    b.set("max_groups", std::to_string(max_groups)).set("excluded_jobs", pq::text_array(excluded_jobs));
  }
};

// Settles a batch (prescient.runner_settle, sql/functions/073_runner_settle.sql): each answer judged by
// prescient.judge, finished checks to the history, the others to their next time with a row in the timeline,
// events to the outbox. A check the database refuses for its values comes back unsettled, one row each, with
// the database's words (the others settle all the same); else one row. Each row: the counts of what became of
// the settled checks, how many statements the server ran, then the culprit's id and refusal (or NULLs).
inline const pq::NamedStatement kSettle(R"sql(
SELECT checks, events, done, rescheduled, retried, failed, guarded, statements, refused_id, refusal
  FROM prescient.runner_settle(
         ROW(:ids::bigint[], :errors::text[], :answers::timestamptz[], :run_micros::bigint[],
             :payload_updates::text[], :results::text[], :due_us::bigint[], :jobs::text[], :slots::timestamptz[],
             :asked::timestamptz[], :check_counts::bigint[], :attempts::bigint[], :own_max_checks::bigint[],
             :own_max_attempts::bigint[], :own_backoff::bigint[], :own_backoff_max::bigint[],
             :max_checks::bigint[], :max_attempts::bigint[], :backoff::bigint[],
             :backoff_max::bigint[])::prescient.settle_checks,
         ROW(:event_ids::text[], :event_types::text[], :event_sources::text[], :event_times::bigint[],
             :event_payloads::text[], :event_checks::bigint[], :event_traceparents::text[])::prescient.settle_events,
         ROW(:runner_id, prescient.at_us(:now::bigint), :lease_token::bigint, :slot_seconds::integer,
             :max_horizon_seconds::bigint)::prescient.settle_context,
         :in_chunks::boolean))sql");
// The batch as prescient.runner_settle's three records take it (sql/0055_named_settlement_inputs.sql): one
// element per check in each of the first twenty (prescient.settle_checks, the same length), one per event in
// the last seven (prescient.settle_events), then the context.
struct Settle {
  const std::vector<std::int64_t>& ids;
  const std::vector<std::optional<std::string>>& errors;  // a failed run's (storable text); null: it answered
  const std::vector<std::optional<TimePoint>>& answers;  // its answer; null: done (or failed)
  const std::vector<std::optional<std::int64_t>>& run_micros;
  const std::vector<std::optional<std::string>>& payload_updates;  // a JSON object to merge, or null
  const std::vector<std::optional<std::string>>& results;          // what the run returned (JSON), or null
  const std::vector<std::int64_t>& due_us;                         // the time each ran for (µs)
  // The check as it ran (prescient.judge's inputs): its class, slot, asked-for time, counts before the run,
  // its own policy (null where not set) and its class's limits (null: a day's backoff_max, a slot's backoff).
  const std::vector<std::string>& jobs;
  const std::vector<TimePoint>& slots;
  const std::vector<TimePoint>& asked;
  const std::vector<std::int64_t>& check_counts;
  const std::vector<std::int64_t>& attempts;
  const std::vector<std::optional<std::int64_t>>& own_max_checks;
  const std::vector<std::optional<std::int64_t>>& own_max_attempts;
  const std::vector<std::optional<std::int64_t>>& own_backoff;
  const std::vector<std::optional<std::int64_t>>& own_backoff_max;
  const std::vector<std::int64_t>& max_checks;
  const std::vector<std::int64_t>& max_attempts;
  const std::vector<std::optional<std::int64_t>>& backoff;
  const std::vector<std::optional<std::int64_t>>& backoff_max;
  std::int64_t max_horizon_seconds;
  std::int64_t slot_seconds;
  // Every check of the batch is done (no failure, no next time): the judge reads nothing of them but their
  // counts, and the check's class, slot, asked-for time and class limits travel as NULL.
  bool all_done;
  std::optional<std::int64_t> lease_token;  // none on the fast path, where the claim's row locks are the lease
  bool in_chunks;  // start in chunks, as after a refusal
  TimePoint now;
  const std::string& runner_id;
  const std::vector<std::optional<std::string>>& event_ids;
  const std::vector<std::optional<std::string>>& event_types;
  const std::vector<std::optional<std::string>>& event_sources;
  const std::vector<std::int64_t>& event_times;  // occurred_at (µs)
  const std::vector<std::optional<std::string>>& event_payloads;
  const std::vector<std::int64_t>& event_checks;  // the check each event belongs to
  const std::vector<std::optional<std::string>>& event_traceparents;  // the run's trace context, or null
  void bind(pq::Binding& b) const {
    // The columns a batch mostly leaves unset (no failure, no own policy) travel as NULL when all are.
    b.set("ids", pq::integer_array(ids)).set("errors", pq::text_array_or_null(errors));
    b.set("answers", pq::time_array_or_null(answers)).set("run_micros", pq::optional_integer_array(run_micros));
    b.set("payload_updates", pq::text_array_or_null(payload_updates)).set("due_us", pq::integer_array(due_us));
    b.set("results", pq::text_array_or_null(results));
    const pq::Param none(std::nullopt);
    b.set("jobs", all_done ? none : pq::text_array(jobs)).set("slots", all_done ? none : pq::time_array(slots));
    b.set("asked", all_done ? none : pq::time_array(asked)).set("check_counts", pq::integer_array(check_counts));
    b.set("attempts", pq::integer_array(attempts)).set("own_max_checks", pq::integer_array_or_null(own_max_checks));
    b.set("own_max_attempts", pq::integer_array_or_null(own_max_attempts));
    b.set("own_backoff", pq::integer_array_or_null(own_backoff));
    b.set("own_backoff_max", pq::integer_array_or_null(own_backoff_max));
    b.set("max_checks", all_done ? none : pq::integer_array(max_checks));
    b.set("max_attempts", all_done ? none : pq::integer_array(max_attempts));
    b.set("backoff", pq::integer_array_or_null(backoff)).set("backoff_max", pq::integer_array_or_null(backoff_max));
    b.set("max_horizon_seconds", std::to_string(max_horizon_seconds)).set("slot_seconds", std::to_string(slot_seconds));
    b.set("lease_token", lease_token ? pq::Param(std::to_string(*lease_token)) : pq::Param(std::nullopt));
    b.set("in_chunks", in_chunks ? "true" : "false");
    b.set("now", pq::micros(now)).set("runner_id", runner_id);
    b.set("event_ids", pq::text_array(event_ids)).set("event_types", pq::text_array(event_types));
    b.set("event_sources", pq::text_array(event_sources)).set("event_times", pq::integer_array(event_times));
    b.set("event_payloads", pq::text_array(event_payloads)).set("event_checks", pq::integer_array(event_checks));
    b.set("event_traceparents", pq::text_array(event_traceparents));
  }
};

// The slow path's lease: one random token for the whole batch. Answers the token and how many rows took it.
inline const pq::NamedStatement kLease(R"sql(
WITH t AS (SELECT (random() * 9007199254740991)::bigint AS token),
leased AS (
  UPDATE prescient.future_job
     SET claimed_by = :runner_id, claimed_until = prescient.at_us(:until), claim_token = (SELECT token FROM t)
   WHERE id = ANY (:ids::bigint[])
  RETURNING 1)
SELECT token, (SELECT count(*) FROM leased) FROM t)sql");
struct Lease {
  const std::string& runner_id;
  TimePoint until;
  std::span<const std::int64_t> ids;
  void bind(pq::Binding& b) const {
    b.set("runner_id", runner_id).set("until", pq::micros(until)).set("ids", pq::integer_array(ids));
  }
};

// Answers in business time, each a time or its problem (prescient.business_answers, 087), so that a bad answer
// is its check's failure, not the statement's.
inline const pq::NamedStatement kBusinessDue(R"sql(
SELECT a.problem, prescient.us(a.due_at), a.calendar_version
  FROM prescient.business_answers(:calendars::text[], :delays::text[], prescient.at_us(:now)) a
 ORDER BY a.n)sql");
struct BusinessDueOf {
  const std::vector<std::optional<std::string>>& calendars;
  const std::vector<std::optional<std::string>>& delays;
  TimePoint now;
  void bind(pq::Binding& b) const {
    b.set("calendars", pq::text_array(calendars)).set("delays", pq::text_array(delays)).set("now", pq::micros(now));
  }
};

// The timeline rows of runs answered in business time name what computed their next time (087, runs_timed_by).
inline const pq::NamedStatement kRunsTimedBy(R"sql(
SELECT prescient.runs_timed_by(:ids::bigint[],
                               ARRAY(SELECT prescient.at_us(d.us)
                                       FROM unnest(:dues::bigint[]) WITH ORDINALITY AS d(us, n) ORDER BY d.n),
                               :calendars::text[], :versions::bigint[]::integer[], :delays::text[], prescient.at_us(:since)))sql");
struct RunsTimedBy {
  std::span<const std::int64_t> ids;
  std::span<const std::int64_t> dues;  // Unix microseconds
  const std::vector<std::optional<std::string>>& calendars;
  std::span<const std::int64_t> versions;
  const std::vector<std::optional<std::string>>& delays;
  TimePoint since;
  void bind(pq::Binding& b) const {
    b.set("ids", pq::integer_array(ids))
        .set("dues", pq::integer_array(dues))
        .set("calendars", pq::text_array(calendars))
        .set("versions", pq::integer_array(versions))
        .set("delays", pq::text_array(delays))
        .set("since", pq::micros(since));
  }
};

// Locks the checks whose lease is still this token's and still live; answers their ids.
inline const pq::NamedStatement kLockLiveLeases(R"sql(
SELECT id
  FROM prescient.future_job
 WHERE id = ANY (:ids::bigint[]) AND claim_token = :token AND claimed_until > prescient.at_us(:now)
   FOR UPDATE)sql");
struct LockLiveLeases {
  std::span<const std::int64_t> ids;
  std::int64_t token;
  TimePoint now;
  void bind(pq::Binding& b) const {
    b.set("ids", pq::integer_array(ids)).set("token", std::to_string(token)).set("now", pq::micros(now));
  }
};

// Gives the checks back, if the lease is still this token's.
inline const pq::NamedStatement kReleaseLeases(R"sql(
UPDATE prescient.future_job
   SET claimed_by = NULL, claimed_until = NULL, claim_token = NULL
 WHERE id = ANY (:ids::bigint[]) AND claim_token = :token)sql");
struct ReleaseLeases {
  std::span<const std::int64_t> ids;
  std::int64_t token;
  void bind(pq::Binding& b) const { b.set("ids", pq::integer_array(ids)).set("token", std::to_string(token)); }
};

// Flow control's admission of a batch (sql/functions: flow_admit), one element per check and limit in
// the first three.
inline const pq::NamedStatement kAdmit(R"sql(
SELECT check_id, start_us, deferred_by, until_us
  FROM prescient.flow_admit(:check_ids, :limits, :keys, :now, :pace_us, :longest_wait_us, :places, :grace_us))sql");
struct Admit {
  const std::vector<std::int64_t>& check_ids;
  const std::vector<std::optional<std::string>>& limits;  // the limits' names
  const std::vector<std::optional<std::string>>& keys;    // each check's key under its limit
  TimePoint now;
  Micros pace, longest_wait;
  int places;
  Micros grace;  // a reservation's
  void bind(pq::Binding& b) const {
    b.set("check_ids", pq::integer_array(check_ids)).set("limits", pq::text_array(limits));
    b.set("keys", pq::text_array(keys)).set("now", pq::micros(now)).set("pace_us", std::to_string(pace.count()));
    b.set("longest_wait_us", std::to_string(longest_wait.count())).set("places", std::to_string(places));
    b.set("grace_us", std::to_string(grace.count()));
  }
};

// The limits in force of job classes (prescient.class_limits, 071): the runner's coded policies and its
// config file's defaults in, one row per class out.
inline const pq::NamedStatement kClassLimits(R"sql(
SELECT job, max_checks, max_attempts, backoff_seconds, backoff_max_seconds, timeout_seconds, coded_problem,
       timeout_cut_from
  FROM prescient.class_limits(:jobs::text[], :coded_max_checks::bigint[]::integer[],
                              :coded_max_attempts::bigint[]::integer[],
                              :coded_backoff::bigint[], :coded_backoff_max::bigint[], :coded_timeout::bigint[],
                              :config_max_checks::integer, :config_max_attempts::integer, :config_backoff::bigint,
                              :config_backoff_max::bigint, :config_timeout::bigint))sql");
struct ClassLimitsOf {
  const std::vector<std::string>& jobs;
  // Each class's coded policy, one element per class (null where not set), in seconds for the durations.
  const std::vector<std::optional<std::int64_t>>&coded_max_checks, &coded_max_attempts, &coded_backoff,
      &coded_backoff_max, &coded_timeout;
  std::optional<std::int64_t> config_max_checks, config_max_attempts, config_backoff, config_backoff_max,
      config_timeout;
  void bind(pq::Binding& b) const {
    b.set("jobs", pq::text_array(jobs)).set("coded_max_checks", pq::integer_array_or_null(coded_max_checks));
    b.set("coded_max_attempts", pq::integer_array_or_null(coded_max_attempts));
    b.set("coded_backoff", pq::integer_array_or_null(coded_backoff));
    b.set("coded_backoff_max", pq::integer_array_or_null(coded_backoff_max));
    b.set("coded_timeout", pq::integer_array_or_null(coded_timeout));
    b.set("config_max_checks", pq::number_text(config_max_checks));
    b.set("config_max_attempts", pq::number_text(config_max_attempts));
    b.set("config_backoff", pq::number_text(config_backoff));
    b.set("config_backoff_max", pq::number_text(config_backoff_max));
    b.set("config_timeout", pq::number_text(config_timeout));
  }
};

// The earliest claimable check deferred to a time within the slot, after its boundary.
inline const pq::NamedStatement kNextWaiting(fmt::format(R"sql(
SELECT prescient.us(min(next_check_at))
  FROM prescient.future_job
 WHERE next_check_at >= prescient.at_us(:slot) AND next_check_at < prescient.at_us(:next_slot)
   AND {claimable})sql",
                                                         fmt::arg("claimable", kClaimable)));
struct NextWaiting {
  TimePoint slot, next_slot;
  Claimable claimable;
  void bind(pq::Binding& b) const {
    b.set("slot", pq::micros(slot)).set("next_slot", pq::micros(next_slot));
    claimable.bind(b);
  }
};

// The sweep: the earliest slot with a check a runner may claim due in [from, until).
inline const pq::NamedStatement kNextOverdueSlot(R"sql(
SELECT prescient.us(min(next_check_at))
  FROM prescient.future_job
 WHERE next_check_at >= prescient.at_us(:from) AND next_check_at < prescient.at_us(:until)
   AND job NOT IN )sql" PRESCIENT_NOT_RUNNERS_CLASSES);
struct NextOverdueSlot {
  TimePoint from, until;
  void bind(pq::Binding& b) const { b.set("from", pq::micros(from)).set("until", pq::micros(until)); }
};

// The paused classes: the daemon looks at them between boundaries, to run at once what a resume made
// claimable in the slots it has fired (runner/daemon.cpp).
inline const pq::NamedStatement kPausedClasses("SELECT job FROM prescient.paused_job ORDER BY job");
struct PausedClasses {
  void bind(pq::Binding&) const {}
};

// The earliest end of a live lease on a runner's check due before a time (a lease written by a runner
// that may since have died): its check becomes claimable then, and the daemon looks again at that time.
inline const pq::NamedStatement kNextLeaseEnd(R"sql(
SELECT prescient.us(min(claimed_until))
  FROM prescient.future_job
 WHERE next_check_at < prescient.at_us(:before) AND claimed_until > prescient.at_us(:now)
   AND job NOT IN (SELECT job FROM prescient.job_class WHERE runs_in = 'worker'))sql");
struct NextLeaseEnd {
  TimePoint now, before;
  void bind(pq::Binding& b) const { b.set("now", pq::micros(now)).set("before", pq::micros(before)); }
};

// The sweep in shift mode: moves up to a limit of a slot's checks to another time; answers how many.
inline const pq::NamedStatement kShiftSlot(R"sql(
WITH moved AS (
  UPDATE prescient.future_job
     SET next_check_at = prescient.at_us(:to)
   WHERE id IN (SELECT id FROM prescient.future_job
                 WHERE next_check_at = prescient.at_us(:slot)
                 LIMIT :limit
                   FOR UPDATE SKIP LOCKED)
  RETURNING 1)
SELECT count(*) FROM moved)sql");
struct ShiftSlot {
  TimePoint to, slot;
  int limit;
  void bind(pq::Binding& b) const {
    b.set("to", pq::micros(to)).set("slot", pq::micros(slot)).set("limit", std::to_string(limit));
  }
};

}  // namespace prescient::db::runner_sql
