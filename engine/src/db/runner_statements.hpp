#pragma once
// Internal: every statement the runner's store runs (db/pg_runner_store.cpp binds them), each named once
// and written as it is sent. Parameters are numbered in the order a reader meets them, and listed above
// each statement. Time always comes in as a parameter (microseconds since the epoch); no statement asks
// the server for now().
#include <spdlog/fmt/fmt.h>

#include <string>

#include "db/check_columns.hpp"

namespace prescient::db::runner_sql {

// What a run needs of a claimed check (db/check_columns.hpp), read in binary, then the time it is due:
// its slot, or a time within the slot that flow control deferred it to.
inline const std::string kClaimColumns = check_column_list(true) + ", next_check_at";
inline constexpr int kDueColumn = kCheckColumnCount;

// Which rows of a slot a claim may take, and those the drain waits for: ungrouped, not under a live
// lease, not of an excluded class or id, not paused. Its three parameters are numbered from `first` on:
//   $first  now (µs)   $first+1  the excluded classes   $first+2  the excluded ids
inline std::string claimable(int first) {
  return fmt::format(R"sql(group_key IS NULL
   AND (claimed_until IS NULL OR claimed_until <= prescient.at_us(${}))
   AND job <> ALL (${}::text[]) AND id <> ALL (${}::bigint[])
   AND job NOT IN (SELECT job FROM prescient.paused_job))sql",
                     first, first + 1, first + 2);
}

// The slot's own checks and those flow control deferred to a time within it.
//   $1 the slot's boundary   $2 the slot's last microsecond, or earlier   $3-$5 claimable   $6 how many
inline const std::string kClaimDue = fmt::format(R"sql(
SELECT {columns}
  FROM prescient.future_job
 WHERE next_check_at BETWEEN prescient.at_us($1) AND prescient.at_us($2)
   AND {claimable}
 LIMIT $6
   FOR UPDATE SKIP LOCKED)sql",
                                                 fmt::arg("columns", kClaimColumns), fmt::arg("claimable", claimable(3)));

// Fair share: the field's values at the slot, stepped through one index probe each (the index
// sync_fair_share_indexes makes: next_check_at, the value, id), then each value's first checks, as many
// as its weight's share of the limit. Run unnamed, so the plan sees the field's name and uses that index.
//   $1 the payload field   $2 the slot   $3 how many   $4 the weights ({"value": weight}, 1 if absent)
//   $5-$7 claimable
inline const std::string kClaimDueFair = fmt::format(R"sql(
WITH RECURSIVE v AS (
  (SELECT coalesce(payload ->> $1, '') AS value, 1 AS n
     FROM prescient.future_job
    WHERE next_check_at = prescient.at_us($2) AND group_key IS NULL
    ORDER BY 1 LIMIT 1)
  UNION ALL
  SELECT (SELECT coalesce(f.payload ->> $1, '')
            FROM prescient.future_job f
           WHERE f.next_check_at = prescient.at_us($2) AND f.group_key IS NULL
             AND coalesce(f.payload ->> $1, '') > v.value
           ORDER BY 1 LIMIT 1),
         v.n + 1
    FROM v WHERE v.value IS NOT NULL AND v.n < $3),
vals AS (
  SELECT value, coalesce(($4::jsonb ->> value)::bigint, 1) AS weight FROM v WHERE value IS NOT NULL)
SELECT c.*
  FROM vals, LATERAL (
    SELECT {columns}
      FROM prescient.future_job
     WHERE next_check_at = prescient.at_us($2) AND coalesce(payload ->> $1, '') = vals.value
       AND {claimable}
     ORDER BY id
     LIMIT greatest(1, $3 * vals.weight / (SELECT sum(weight) FROM vals))
       FOR UPDATE SKIP LOCKED) c
 LIMIT $3)sql",
                                                     fmt::arg("columns", kClaimColumns),
                                                     fmt::arg("claimable", claimable(5)));

// Whole groups at the slot, each under a transaction's advisory lock, so one runner takes a group at a
// time. The lock is tried on distinct groups only (a volatile qual is not pushed below DISTINCT).
//   $1 the slot   $2 the excluded groups   $3 how many groups   $4 the excluded classes
inline const std::string kClaimDueGroups = fmt::format(R"sql(
WITH mine AS (
  SELECT g.group_key
    FROM (SELECT DISTINCT group_key
            FROM prescient.future_job
           WHERE next_check_at = prescient.at_us($1) AND group_key IS NOT NULL
             AND group_key <> ALL ($2::text[])) g
   WHERE pg_try_advisory_xact_lock(hashtextextended('prescient.group:' || g.group_key, 0))
   LIMIT $3)
SELECT {columns}
  FROM prescient.future_job f
 WHERE f.next_check_at = prescient.at_us($1) AND f.group_key IN (SELECT group_key FROM mine)
   AND f.job <> ALL ($4::text[]) AND f.job NOT IN (SELECT job FROM prescient.paused_job)
 ORDER BY f.group_key, f.id
   FOR UPDATE OF f)sql",
                                                       fmt::arg("columns", kClaimColumns));

// Settles a batch in one statement: finished checks move to the history, the others take their next
// time, and their events go to the outbox (once: a repeated id is ignored), each announced by NOTIFY.
// Answers how many checks it settled and how many events were new.
//   $1-$9   one element per check: id, kind (finish | reschedule | retry), outcome, next time (µs),
//           check_count, attempts, last_error, run_micros, payload update (a JSON object to merge, or null)
//   $10     the lease token (null on the fast path, where the claim's row locks are the lease)
//   $11     now (µs)   $12 the runner's id
//   $13-$18 one element per event: id, type, source, occurred_at (µs), payload, the check it belongs to
inline const std::string kSettle = R"sql(
WITH s AS (
  SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[],
                       $7::text[], $8::bigint[], $9::text[])
    AS s(id, kind, outcome, next_us, check_count, attempts, last_error, run_micros, payload)),
-- The fence: without a token the caller holds the row locks; with one, only its live lease counts. Two
-- branches gated on the token alone, so the fast path does not join the table at all.
mine AS (
  SELECT s.* FROM s WHERE $10::bigint IS NULL
  UNION ALL
  SELECT s.* FROM s JOIN prescient.future_job f ON f.id = s.id
   WHERE $10::bigint IS NOT NULL AND f.claim_token = $10 AND f.claimed_until > prescient.at_us($11)),
fin AS (
  DELETE FROM prescient.future_job f USING mine s WHERE f.id = s.id AND s.kind = 'finish'
  RETURNING f.*, s.outcome AS s_outcome, s.check_count AS s_count, s.attempts AS s_attempts,
            s.last_error AS s_error, s.run_micros AS s_run, s.payload AS s_payload),
hist AS (
  INSERT INTO prescient.job_history (id, job, entity_name, entity_key, job_key, group_key, payload,
      first_check_at, last_check_at, check_count, attempts, last_error, enqueued_on, enqueued_by,
      finished_at, finished_by, outcome, run_micros)
  SELECT id, job, entity_name, entity_key, job_key, group_key,
         CASE WHEN s_payload IS NULL THEN payload ELSE payload || s_payload::jsonb END,
         first_check_at, next_check_at,
         s_count, s_attempts, s_error, enqueued_on, enqueued_by, prescient.at_us($11), $12, s_outcome, s_run
    FROM fin),
upd AS (
  UPDATE prescient.future_job f
     SET next_check_at = prescient.at_us(s.next_us), check_count = s.check_count, attempts = s.attempts,
         last_error = s.last_error, claimed_by = NULL, claimed_until = NULL, claim_token = NULL,
         payload = CASE WHEN s.payload IS NULL THEN f.payload ELSE f.payload || s.payload::jsonb END
    FROM mine s WHERE f.id = s.id AND s.kind <> 'finish'
  RETURNING f.id),
ev AS (
  INSERT INTO prescient.event (id, type, source, occurred_at, emitted_at, payload)
  SELECT e.id, e.type, e.source, prescient.at_us(e.occurred_us), prescient.at_us($11), e.payload::jsonb
    FROM unnest($13::text[], $14::text[], $15::text[], $16::bigint[], $17::text[], $18::bigint[])
      AS e(id, type, source, occurred_us, payload, check_id)
   WHERE e.check_id IN (SELECT id FROM fin UNION ALL SELECT id FROM upd)
  ON CONFLICT (id) DO NOTHING RETURNING id)
SELECT (SELECT count(*) FROM fin) + (SELECT count(*) FROM upd),
       (SELECT count(pg_notify('prescient_event', ev.id)) FROM ev)
)sql";

// The slow path's lease: one random token for the whole batch. Answers the token and how many rows took it.
//   $1 the runner's id   $2 until when (µs)   $3 the checks' ids
inline const std::string kLease = R"sql(
WITH t AS (SELECT (random() * 9007199254740991)::bigint AS token),
leased AS (
  UPDATE prescient.future_job
     SET claimed_by = $1, claimed_until = prescient.at_us($2), claim_token = (SELECT token FROM t)
   WHERE id = ANY ($3::bigint[])
  RETURNING 1)
SELECT token, (SELECT count(*) FROM leased) FROM t)sql";

// Locks the checks whose lease is still this token's and still live; answers their ids.
//   $1 the checks' ids   $2 the token   $3 now (µs)
inline const std::string kLockLiveLeases = R"sql(
SELECT id
  FROM prescient.future_job
 WHERE id = ANY ($1::bigint[]) AND claim_token = $2 AND claimed_until > prescient.at_us($3)
   FOR UPDATE)sql";

// Gives the checks back, if the lease is still this token's.
//   $1 the checks' ids   $2 the token
inline const std::string kReleaseLeases = R"sql(
UPDATE prescient.future_job
   SET claimed_by = NULL, claimed_until = NULL, claim_token = NULL
 WHERE id = ANY ($1::bigint[]) AND claim_token = $2)sql";

// Flow control's admission of a batch (sql/functions: flow_admit).
//   $1-$3 one element per check and limit: the check's id, the limit's name, its key
//   $4 now (µs)   $5 the pace (µs)   $6 the longest wait (µs)   $7 how many places   $8 a reservation's grace (µs)
inline const std::string kAdmit = R"sql(
SELECT check_id, start_us, deferred_by, until_us
  FROM prescient.flow_admit($1, $2, $3, $4, $5, $6, $7, $8))sql";

// The earliest claimable check deferred to a time within the slot, after its boundary.
//   $1 the slot's boundary   $2 the next slot's boundary   $3-$5 claimable
inline const std::string kNextWaiting = fmt::format(R"sql(
SELECT prescient.us(min(next_check_at))
  FROM prescient.future_job
 WHERE next_check_at >= prescient.at_us($1) AND next_check_at < prescient.at_us($2)
   AND {claimable})sql",
                                                    fmt::arg("claimable", claimable(3)));

// The sweep: the earliest slot with an unpaused check due in [from, until).
//   $1 from (µs)   $2 until (µs)
inline const std::string kNextOverdueSlot = R"sql(
SELECT prescient.us(min(next_check_at))
  FROM prescient.future_job
 WHERE next_check_at >= prescient.at_us($1) AND next_check_at < prescient.at_us($2)
   AND job NOT IN (SELECT job FROM prescient.paused_job))sql";

// The sweep in shift mode: moves up to a limit of a slot's checks to another time; answers how many.
//   $1 the time they move to (µs)   $2 the slot (µs)   $3 how many
inline const std::string kShiftSlot = R"sql(
WITH moved AS (
  UPDATE prescient.future_job
     SET next_check_at = prescient.at_us($1)
   WHERE id IN (SELECT id FROM prescient.future_job
                 WHERE next_check_at = prescient.at_us($2)
                 LIMIT $3
                   FOR UPDATE SKIP LOCKED)
  RETURNING 1)
SELECT count(*) FROM moved)sql";

}  // namespace prescient::db::runner_sql
