// The runner's statements on PostgreSQL: claiming due checks, settling them, the slow path's leases, and
// what the sweep asks (overdue slots). Time always comes in as a parameter; the SQL never asks the
// server for now(). Statements are prepared once per session where they are hot (claim, settle).
#include <nlohmann/json.hpp>
#include <soci/soci.h>
#include <spdlog/spdlog.h>

#include <mutex>

#include "db/check_columns.hpp"
#include "db/flow_limit_rows.hpp"
#include "db/pq.hpp"
#include "db/connection.hpp"
#include "prescient/database.hpp"
#include "prescient/errors.hpp"
#include "prescient/retention.hpp"
#include "prescient/runners_seen.hpp"
#include "prescient/server_clock.hpp"
#include "db/pg_runner_store.hpp"

namespace prescient {
namespace {

// What a run needs of a claimed check (db/check_columns.hpp), read in binary (no text conversion of numbers and times on
// either side), then the time it is due: its slot, or a time within the slot flow control deferred it to.
const std::string kClaimColumns = db::check_column_list(true) + ", next_check_at";
constexpr int kDueColumn = db::kCheckColumnCount;

// Which rows of a slot a claim may take (and the drain's look for checks deferred within the slot waits
// for): ungrouped, not under a live lease ($2: now), not of an excluded class ($4) or id ($5), not paused.
const std::string kClaimable =
    " group_key IS NULL AND (claimed_until IS NULL OR claimed_until <= prescient.at_us($2))"
    " AND job <> ALL ($4::text[]) AND id <> ALL ($5::bigint[])"
    " AND job NOT IN (SELECT job FROM prescient.paused_job)";

// Reads the claimed rows. A payload the runner cannot parse (jsonb holds numbers no double can) makes
// its check unreadable, not the claim: it is failed alone, with the reason.
RunnerStore::Claimed checks_from(const pq::Result& rows) {
  RunnerStore::Claimed out;
  out.checks.reserve(rows.rows());
  for (int r = 0; r < rows.rows(); ++r) {
    Check c;
    db::read_check_columns(rows, r, c);
    c.slot = rows.time(r, kDueColumn);
    try {
      c.payload = nlohmann::json::parse(rows.text(r, db::kPayloadColumn));
      out.checks.push_back(std::move(c));
    } catch (const nlohmann::json::exception& e) {
      out.unreadable.emplace_back(std::move(c), std::string("its payload cannot be read: ") + e.what());
    }
  }
  return out;
}

pq::Param names_array(const std::vector<std::string>& names) {
  const std::vector<std::optional<std::string>> values(names.begin(), names.end());
  return pq::text_array(values);
}

const char* kind_name(Settlement::Kind kind) {
  switch (kind) {
    case Settlement::Kind::reschedule: return "reschedule";
    case Settlement::Kind::retry: return "retry";
    case Settlement::Kind::finish: return "finish";
  }
  return "finish";
}

bool prepares(soci::session& db, StatementPreparation preparation) {
  if (preparation != StatementPreparation::automatic) return preparation == StatementPreparation::on;
  if (!through_pooler(db)) return true;
  static std::once_flag said;
  std::call_once(said, [] {
    spdlog::info("the database is reached through a connection pooler: the runner's statements are not prepared "
                 "(a pooler in transaction mode loses them between transactions; --prepared-statements on "
                 "prepares them, for one in session mode)");
  });
  return false;
}

}  // namespace

PgRunnerStore::PgRunnerStore(std::unique_ptr<soci::session> db, StatementPreparation preparation)
    : PgRunnerStore(*db, preparation) {
  owned_ = std::move(db);
}
PgRunnerStore::PgRunnerStore(soci::session& db, StatementPreparation preparation)
    : db_(db), prepared_(std::make_unique<pq::PreparedStatements>(prepares(db, preparation))) {}
PgRunnerStore::~PgRunnerStore() = default;

void PgRunnerStore::begin() { transaction_.emplace(db_); }
void PgRunnerStore::commit() {
  transaction_->commit();
  transaction_.reset();
}
void PgRunnerStore::rollback() noexcept { transaction_.reset(); }

// From the slot's boundary through $6: the slot's own checks and those flow control deferred to a time
// within it ($6 is at most the slot's last microsecond; on the grid nothing else lies there).
const std::string kClaimDue =
    "SELECT " + kClaimColumns +
    " FROM prescient.future_job"
    " WHERE next_check_at BETWEEN prescient.at_us($1) AND prescient.at_us($6) AND" + kClaimable +
    " LIMIT $3 FOR UPDATE SKIP LOCKED";

RunnerStore::Claimed PgRunnerStore::claim_due(TimePoint slot, TimePoint until, TimePoint now, int limit,
                                              const Exclusions& excluded) {
  return checks_from(prepared_->exec(native_connection(db_), "cannot claim due checks", kClaimDue,
                                     {pq::micros(slot), pq::micros(now), std::to_string(limit), names_array(excluded.jobs),
                                      pq::integer_array(excluded.ids), pq::micros(std::max(slot, until))},
                                     pq::Format::binary));
}

std::string PgRunnerStore::claim_plan(TimePoint slot, TimePoint now) {
  const pq::Result plan = pq::exec(native_connection(db_), "cannot explain the claim", "EXPLAIN " + kClaimDue,
                                   {pq::micros(slot), pq::micros(now), "1000", "{}", "{}", pq::micros(slot)});
  std::string text;
  for (int r = 0; r < plan.rows(); ++r) text += plan.text(r, 0) + "\n";
  return text;
}

// Fair share: the field's values at the slot, stepped through one index probe each (the index
// sync_fair_share_indexes makes: next_check_at, the value, id), then each value's first checks. Run
// unnamed, so the plan sees the field's name and uses that index.
const std::string kClaimDueFair =
    "WITH RECURSIVE v AS ("
    "  (SELECT coalesce(payload ->> $6, '') AS value, 1 AS n FROM prescient.future_job"
    "    WHERE next_check_at = prescient.at_us($1) AND group_key IS NULL ORDER BY 1 LIMIT 1)"
    "  UNION ALL"
    "  SELECT (SELECT coalesce(f.payload ->> $6, '') FROM prescient.future_job f"
    "           WHERE f.next_check_at = prescient.at_us($1) AND f.group_key IS NULL"
    "             AND coalesce(f.payload ->> $6, '') > v.value ORDER BY 1 LIMIT 1), v.n + 1"
    "    FROM v WHERE v.value IS NOT NULL AND v.n < $3),"
    " vals AS (SELECT value, coalesce(($7::jsonb ->> value)::bigint, 1) AS weight FROM v WHERE value IS NOT NULL)"
    " SELECT c.* FROM vals, LATERAL ("
    "   SELECT " + kClaimColumns + " FROM prescient.future_job"
    "    WHERE next_check_at = prescient.at_us($1) AND coalesce(payload ->> $6, '') = vals.value AND" + kClaimable +
    "    ORDER BY id LIMIT greatest(1, $3 * vals.weight / (SELECT sum(weight) FROM vals))"
    "    FOR UPDATE SKIP LOCKED) c"
    " LIMIT $3";

RunnerStore::Claimed PgRunnerStore::claim_due_fair(TimePoint slot, TimePoint now, int limit, const Exclusions& excluded,
                                                   const FlowLimit& fair) {
  return checks_from(pq::exec(native_connection(db_), "cannot claim due checks in fair shares", kClaimDueFair,
                              {pq::micros(slot), pq::micros(now), std::to_string(limit), names_array(excluded.jobs),
                               pq::integer_array(excluded.ids), flow_payload_field(fair).value(),
                               nlohmann::json(fair.weights).dump()},
                              pq::Format::binary));
}

const std::string kClaimDueGroups =
    // The advisory lock is tried on distinct groups only (a volatile qual is not pushed below DISTINCT).
    "WITH mine AS ("
    "  SELECT g.group_key FROM ("
    "    SELECT DISTINCT group_key FROM prescient.future_job"
    "     WHERE next_check_at = prescient.at_us($1) AND group_key IS NOT NULL AND group_key <> ALL ($4::text[])) g"
    "   WHERE pg_try_advisory_xact_lock(hashtextextended('prescient.group:' || g.group_key, 0))"
    "   LIMIT $2)"
    " SELECT " + kClaimColumns +
    " FROM prescient.future_job f"
    " WHERE f.next_check_at = prescient.at_us($1) AND f.group_key IN (SELECT group_key FROM mine)"
    "   AND f.job <> ALL ($3::text[]) AND f.job NOT IN (SELECT job FROM prescient.paused_job)"
    " ORDER BY f.group_key, f.id FOR UPDATE OF f";

RunnerStore::Claimed PgRunnerStore::claim_due_groups(TimePoint slot, int max_groups, const Exclusions& excluded) {
  return checks_from(prepared_->exec(native_connection(db_), "cannot claim due groups", kClaimDueGroups,
                                     {pq::micros(slot), std::to_string(max_groups), names_array(excluded.jobs),
                                      names_array(excluded.groups)},
                                     pq::Format::binary));
}

// Settles a batch in one statement: finished checks move to the history, the others take their next
// time, and their events go to the outbox (once: a repeated id is ignored), each announced by NOTIFY.
// Answers how many checks it settled and how many events were new. Parameters, in order of use:
//   $1-$9   one element per check: id, kind (finish | reschedule | retry), outcome, next time (µs),
//           check_count, attempts, last_error, run_micros, payload update (a JSON object to merge, or null)
//   $10     the lease token (null on the fast path, where the claim's row locks are the lease)
//   $11     now (µs), $12 the runner's id
//   $13-$18 one element per event: id, type, source, occurred_at (µs), payload, the check it belongs to
const std::string kSettle = R"sql(
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

RunnerStore::Settled PgRunnerStore::settle(std::span<const SettleItem> items, const std::string& runner_id, TimePoint now,
                             std::optional<std::int64_t> lease_token) {
  if (items.empty()) return {};
  std::vector<std::int64_t> ids, next_us;
  std::vector<std::optional<std::string>> kinds, outcomes, errors, payloads;
  std::vector<std::int64_t> counts, attempts;
  std::vector<std::optional<std::int64_t>> run_micros;
  std::vector<std::optional<std::string>> event_ids, event_types, event_sources, event_payloads;
  std::vector<std::int64_t> event_times, event_checks;
  for (const SettleItem& item : items) {
    const Settlement& s = item.settlement;
    ids.push_back(item.id);
    kinds.emplace_back(kind_name(s.kind));
    outcomes.emplace_back(s.kind == Settlement::Kind::finish ? std::optional(std::string(to_string(s.outcome)))
                                                             : std::nullopt);
    next_us.push_back(s.kind == Settlement::Kind::finish ? 0 : to_unix_micros(s.next_check_at));
    counts.push_back(s.check_count);
    attempts.push_back(s.attempts);
    errors.push_back(s.last_error);
    run_micros.push_back(item.run_micros);
    payloads.push_back(item.payload_update);
    for (const EventRecord& e : item.events) {
      event_checks.push_back(item.id);
      event_ids.emplace_back(e.id);
      event_types.emplace_back(e.type);
      event_sources.emplace_back(e.source);
      event_times.push_back(to_unix_micros(e.occurred_at));
      event_payloads.emplace_back(e.payload);
    }
  }
  const pq::Result settled = prepared_->exec(
      native_connection(db_), "cannot settle checks", kSettle,
      {pq::integer_array(ids), pq::text_array(kinds), pq::text_array(outcomes), pq::integer_array(next_us),
       pq::integer_array(counts), pq::integer_array(attempts), pq::text_array(errors),
       pq::optional_integer_array(run_micros), pq::text_array(payloads),
       lease_token ? std::optional(std::to_string(*lease_token)) : std::nullopt, pq::micros(now), runner_id,
       pq::text_array(event_ids), pq::text_array(event_types), pq::text_array(event_sources),
       pq::integer_array(event_times), pq::text_array(event_payloads), pq::integer_array(event_checks)});
  return {.checks = settled.integer(0, 0), .events = settled.integer(0, 1)};
}

std::map<std::size_t, std::string> PgRunnerStore::apply_writes(std::span<const SettleItem> items) {
  PGconn* conn = native_connection(db_);
  std::map<std::size_t, std::string> failures;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (items[i].writes.empty()) continue;
    pq::exec(conn, "cannot set a savepoint", "SAVEPOINT prescient_write");
    try {
      for (const BufferedWrite& w : items[i].writes) {
        pq::exec(conn, "write failed", w.sql, pq::Params(w.params.begin(), w.params.end()));
      }
      pq::exec(conn, "cannot release a savepoint", "RELEASE SAVEPOINT prescient_write");
    } catch (const std::exception& e) {
      const auto* database = dynamic_cast<const DatabaseError*>(&e);
      const bool session_lost = PQstatus(conn) != CONNECTION_OK ||
                                (database != nullptr && !database->sqlstate().empty() &&
                                 lost_session_or_server(database->sqlstate()));
      if (session_lost) throw;
      pq::exec(conn, "cannot roll back a write", "ROLLBACK TO SAVEPOINT prescient_write");
      pq::exec(conn, "cannot release a savepoint", "RELEASE SAVEPOINT prescient_write");
      failures[i] = e.what();
    }
  }
  return failures;
}

// Savepoint names are prescient's own constants, never user input: they are SQL identifiers.
void PgRunnerStore::savepoint(const std::string& name) {
  pq::exec(native_connection(db_), "cannot set a savepoint", "SAVEPOINT " + name);
}
void PgRunnerStore::rollback_to(const std::string& name) {
  pq::exec(native_connection(db_), "cannot roll back to a savepoint", "ROLLBACK TO SAVEPOINT " + name);
}
void PgRunnerStore::release_savepoint(const std::string& name) {
  pq::exec(native_connection(db_), "cannot release a savepoint", "RELEASE SAVEPOINT " + name);
}

std::int64_t PgRunnerStore::lease(std::span<const std::int64_t> ids, const std::string& runner_id, TimePoint until) {
  const pq::Result token = pq::exec(
      native_connection(db_), "cannot lease checks",
      "WITH t AS (SELECT (random() * 9007199254740991)::bigint AS token),"
      " leased AS (UPDATE prescient.future_job SET claimed_by = $2, claimed_until = prescient.at_us($3),"
      "                   claim_token = (SELECT token FROM t) WHERE id = ANY ($1::bigint[]) RETURNING 1)"
      " SELECT token, (SELECT count(*) FROM leased) FROM t",
      {pq::integer_array(std::vector<std::int64_t>(ids.begin(), ids.end())), runner_id, pq::micros(until)});
  return token.integer(0, 0);
}

std::vector<std::int64_t> PgRunnerStore::lock_live_leases(std::span<const std::int64_t> ids, std::int64_t token,
                                                  TimePoint now) {
  const pq::Result rows = pq::exec(
      native_connection(db_), "cannot check leases",
      "SELECT id FROM prescient.future_job WHERE id = ANY ($1::bigint[]) AND claim_token = $2"
      " AND claimed_until > prescient.at_us($3) FOR UPDATE",
      {pq::integer_array(std::vector<std::int64_t>(ids.begin(), ids.end())), std::to_string(token), pq::micros(now)});
  std::vector<std::int64_t> live;
  for (int r = 0; r < rows.rows(); ++r) live.push_back(rows.integer(r, 0));
  return live;
}

void PgRunnerStore::release(std::span<const std::int64_t> ids, std::int64_t token) {
  if (ids.empty()) return;
  pq::exec(native_connection(db_), "cannot release leases",
           "UPDATE prescient.future_job SET claimed_by = NULL, claimed_until = NULL, claim_token = NULL"
           " WHERE id = ANY ($1::bigint[]) AND claim_token = $2",
           {pq::integer_array(std::vector<std::int64_t>(ids.begin(), ids.end())), std::to_string(token)});
}

std::vector<FlowLimit> PgRunnerStore::flow_limits() { return db::read_flow_limits(native_connection(db_)); }

std::vector<RunnerStore::Admission> PgRunnerStore::admit(std::span<const FlowPair> pairs, TimePoint now, Micros pace,
                                                         Micros wait, int places) {
  std::vector<std::int64_t> ids;
  std::vector<std::optional<std::string>> limits, keys;
  for (const FlowPair& p : pairs) {
    ids.push_back(p.id);
    limits.emplace_back(p.limit);
    keys.emplace_back(p.key);
  }
  const pq::Result rows = pq::exec(
      native_connection(db_), "cannot admit checks under their flow limits",
      "SELECT check_id, start_us, deferred_by, until_us FROM prescient.flow_admit($1, $2, $3, $4, $5, $6, $7, $8)",
      {pq::integer_array(ids), pq::text_array(limits), pq::text_array(keys), pq::micros(now),
       std::to_string(pace.count()), std::to_string(wait.count()), std::to_string(places),
       std::to_string(kReservationGrace.count())});
  std::vector<Admission> out(rows.rows());
  for (int r = 0; r < rows.rows(); ++r) {
    out[r] = {.id = rows.integer(r, 0), .start = rows.optional_time(r, 1), .deferred_by = rows.optional_text(r, 2),
              .until = rows.optional_time(r, 3)};
  }
  return out;
}

std::optional<TimePoint> PgRunnerStore::next_waiting(TimePoint slot, TimePoint slot_end, TimePoint now,
                                                     const Exclusions& excluded) {
  const pq::Result row = pq::exec(
      native_connection(db_), "cannot look for deferred checks",
      "SELECT prescient.us(min(next_check_at)) FROM prescient.future_job"
      " WHERE next_check_at >= prescient.at_us($1) AND next_check_at < prescient.at_us($3) AND" + kClaimable,
      {pq::micros(slot), pq::micros(now), pq::micros(slot_end), names_array(excluded.jobs),
       pq::integer_array(excluded.ids)});
  return row.optional_time(0, 0);
}

std::optional<TimePoint> PgRunnerStore::next_overdue_slot(TimePoint from, TimePoint until) {
  const pq::Result row = pq::exec(native_connection(db_), "cannot look for overdue checks",
                                  "SELECT prescient.us(min(next_check_at)) FROM prescient.future_job"
                                  " WHERE next_check_at >= prescient.at_us($1) AND next_check_at < prescient.at_us($2)"
                                  "   AND job NOT IN (SELECT job FROM prescient.paused_job)",
                                  {pq::micros(from), pq::micros(until)});
  return row.optional_time(0, 0);
}

std::int64_t PgRunnerStore::shift_slot(TimePoint slot, TimePoint to, int limit) {
  const pq::Result row = pq::exec(
      native_connection(db_), "cannot shift overdue checks",
      "WITH moved AS ("
      "  UPDATE prescient.future_job SET next_check_at = prescient.at_us($2)"
      "   WHERE id IN (SELECT id FROM prescient.future_job WHERE next_check_at = prescient.at_us($1)"
      "                 LIMIT $3 FOR UPDATE SKIP LOCKED)"
      "  RETURNING 1)"
      " SELECT count(*) FROM moved",
      {pq::micros(slot), pq::micros(to), std::to_string(limit)});
  return row.integer(0, 0);
}

Settings PgRunnerStore::read_settings() { return prescient::read_settings(db_); }

int PgRunnerStore::ensure_history_partitions(TimePoint now) { return prescient::ensure_history_partitions(db_, now); }

void PgRunnerStore::record_runner_seen(const std::string& runner_id, const std::string& shard, TimePoint slot,
                                       long claimed, TimePoint now) {
  prescient::record_runner_seen(db_, runner_id, shard, slot, claimed, now);
}

Micros PgRunnerStore::server_clock_offset(const Clock& local) { return prescient::server_clock_offset(db_, local); }

namespace {

class PostgresStoreOpener final : public StoreOpener {
 public:
  PostgresStoreOpener(std::string url, StatementPreparation preparation)
      : url_(std::move(url)), preparation_(preparation) {}
  std::unique_ptr<RunnerStore> open_worker_store() override { return open(); }
  std::unique_ptr<UpkeepStore> open_upkeep_store() override { return open(); }

 private:
  std::unique_ptr<PgRunnerStore> open() { return std::make_unique<PgRunnerStore>(connect(url_), preparation_); }

  std::string url_;
  StatementPreparation preparation_;
};

}  // namespace

std::shared_ptr<StoreOpener> postgres_store_opener(const std::string& database_url, StatementPreparation preparation) {
  return std::make_shared<PostgresStoreOpener>(database_url, preparation);
}

}  // namespace prescient
