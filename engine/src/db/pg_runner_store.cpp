// The runner's store on PostgreSQL: runs the statements of db/runner_statements.hpp (claiming due checks,
// settling them, the slow path's leases, what the sweep asks) with their values, set by name, and reads
// their answers. The hot ones
// (claim, settle) are prepared once per session.
#include <nlohmann/json.hpp>
#include <soci/soci.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <mutex>

#include "db/check_columns.hpp"
#include "db/flow_limit_rows.hpp"
#include "db/pq.hpp"
#include "db/runner_statements.hpp"
#include "db/connection.hpp"
#include "prescient/database.hpp"
#include "prescient/errors.hpp"
#include "prescient/retention.hpp"
#include "prescient/runners_seen.hpp"
#include "prescient/server_clock.hpp"
#include "db/pg_runner_store.hpp"

namespace prescient::db {

using namespace runner_sql;
using namespace prescient::runner;

namespace {

// A column of seconds; none where it is NULL.
std::optional<std::chrono::seconds> optional_seconds(const pq::Result& rows, int r, int column) {
  const auto value = rows.optional_integer(r, column);
  return value ? std::optional(std::chrono::seconds{*value}) : std::nullopt;
}

// The check's own policy (set at enqueue), from its four columns; empty where none is set.
JobPolicy own_policy(const pq::Result& rows, int r) {
  const auto seconds = [&](int column) { return optional_seconds(rows, r, column); };
  const auto max_checks = rows.optional_integer(r, kOwnPolicyColumn);
  const auto max_attempts = rows.optional_integer(r, kOwnPolicyColumn + 1);
  return {.max_checks = max_checks ? std::optional(static_cast<int>(*max_checks)) : std::nullopt,
          .max_attempts = max_attempts ? std::optional(static_cast<int>(*max_attempts)) : std::nullopt,
          .backoff = seconds(kOwnPolicyColumn + 2),
          .backoff_max = seconds(kOwnPolicyColumn + 3)};
}

// Reads the claimed rows. A payload the runner cannot parse (jsonb holds numbers no double can) makes
// its check unreadable, not the claim: it is failed alone, with the reason.
RunnerStore::Claimed checks_from(const pq::Result& rows) {
  RunnerStore::Claimed out;
  out.checks.reserve(rows.rows());
  for (int r = 0; r < rows.rows(); ++r) {
    Check c;
    db::read_check_columns(rows, r, c);
    c.slot = rows.time(r, kDueColumn);
    c.asked_for = rows.time(r, kAskedForColumn);
    c.policy = own_policy(rows, r);
    c.traceparent = rows.optional_text(r, kTraceparentColumn);
    if (c.traceparent) c.tracestate = rows.optional_text(r, kTracestateColumn);
    try {
      c.payload = nlohmann::json::parse(rows.text(r, db::kPayloadColumn));
      out.checks.push_back(std::move(c));
    } catch (const nlohmann::json::exception& e) {
      out.unreadable.emplace_back(std::move(c), std::string("its payload cannot be read: ") + e.what());
    }
  }
  return out;
}

// A claimed row's place in claim order (runner/claim_mark.hpp).
runner::ClaimKey place_of(const pq::Result& rows, int r) {
  return {.due = rows.time(r, kDueColumn),
          .priority = static_cast<int>(rows.integer(r, kPriorityColumn)),
          .id = rows.integer(r, db::kIdColumn)};
}

std::optional<std::int64_t> seconds_of(const std::optional<std::chrono::seconds>& d) {
  return d ? std::optional(static_cast<std::int64_t>(d->count())) : std::nullopt;
}
std::optional<std::int64_t> number_of(const std::optional<int>& n) {
  return n ? std::optional(static_cast<std::int64_t>(*n)) : std::nullopt;
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
  transaction_->commit(commit_limit_);
  transaction_.reset();
}
void PgRunnerStore::rollback() noexcept { transaction_.reset(); }

RunnerStore::Claimed PgRunnerStore::claim_due(TimePoint slot, TimePoint until, TimePoint now, int limit,
                                              const Exclusions& excluded, const std::optional<runner::ClaimKey>& after) {
  const pq::Result rows = pq::exec(*prepared_, native_connection(db_), "cannot claim due checks", kClaimDue,
                                   ClaimDue{.slot = slot,
                                            .until = std::max(slot, until),
                                            .claimable = {.now = now, .excluded_jobs = excluded.jobs, .excluded_ids = excluded.ids},
                                            .limit = limit,
                                            .after = after},
                                   pq::Format::binary);
  Claimed claimed = checks_from(rows);
  if (rows.rows() > 0) claimed.last = place_of(rows, rows.rows() - 1);
  return claimed;
}

std::string PgRunnerStore::claim_plan(TimePoint slot, TimePoint now) {
  const std::vector<std::string> no_jobs;
  const std::vector<std::int64_t> no_ids;
  const ClaimDue claim{.slot = slot,
                       .until = slot,
                       .claimable = {.now = now, .excluded_jobs = no_jobs, .excluded_ids = no_ids},
                       .limit = 1000};
  const pq::Result plan = pq::exec(native_connection(db_), "cannot explain the claim", "EXPLAIN " + kClaimDue.sql(),
                                   pq::bound(kClaimDue, claim));
  std::string text;
  for (int r = 0; r < plan.rows(); ++r) text += plan.text(r, 0) + "\n";
  return text;
}

RunnerStore::Claimed PgRunnerStore::claim_due_fair(TimePoint slot, TimePoint now, int limit, const Exclusions& excluded,
                                                   const FlowLimit& fair,
                                                   const std::map<std::string, runner::ClaimKey>& after) {
  const pq::Result rows = pq::exec(native_connection(db_), "cannot claim due checks in fair shares", kClaimDueFair,
                                   ClaimDueFair{.field = flow_payload_field(fair).value(),
                                                .slot = slot,
                                                .limit = limit,
                                                .weights = nlohmann::json(fair.weights).dump(),
                                                .claimable = {.now = now,
                                                              .excluded_jobs = excluded.jobs,
                                                              .excluded_ids = excluded.ids},
                                                .after = after},
                                   pq::Format::binary);
  Claimed claimed = checks_from(rows);
  // Each value's place: its furthest row.
  for (int r = 0; r < rows.rows(); ++r) {
    runner::keep_furthest(claimed.last_by_value, rows.text(r, kFairValueColumn), place_of(rows, r));
  }
  return claimed;
}

RunnerStore::Claimed PgRunnerStore::claim_due_groups(TimePoint slot, int max_groups, const Exclusions& excluded) {
  return checks_from(pq::exec(*prepared_, native_connection(db_), "cannot claim due groups", kClaimDueGroups,
                              ClaimDueGroups{.slot = slot,
                                             .excluded_groups = excluded.groups,
                                             .max_groups = max_groups,
                                             .excluded_jobs = excluded.jobs},
                              pq::Format::binary));
}

RunnerStore::Settlement PgRunnerStore::settle(std::span<const SettleItem> items, const std::string& runner_id,
                                              TimePoint now, std::optional<std::int64_t> lease_token,
                                              const Judging& judging, bool in_chunks) {
  if (items.empty()) return {};
  std::vector<std::int64_t> ids, due_us, counts, attempts, max_checks, max_attempts;
  std::vector<TimePoint> slots, asked;
  std::vector<std::optional<TimePoint>> answers;
  std::vector<std::optional<std::string>> errors, payloads, results;
  std::vector<std::string> jobs;
  std::vector<std::optional<std::int64_t>> run_micros, own_max_checks, own_max_attempts, own_backoff,
      own_backoff_max, backoff, backoff_max;
  std::vector<std::optional<std::string>> event_ids, event_types, event_sources, event_payloads, event_traceparents;
  std::vector<std::int64_t> event_times, event_checks;
  for (const SettleItem& item : items) {
    const RanCheck& c = item.check;
    ids.push_back(item.id);
    errors.push_back(item.answer.failed ? std::optional(item.answer.error) : std::nullopt);
    answers.push_back(item.answer.failed ? std::nullopt : item.answer.next);
    run_micros.push_back(item.run_micros);
    payloads.push_back(item.payload_update);
    results.push_back(item.result);
    due_us.push_back(to_unix_micros(item.due));
    jobs.push_back(c.job);
    slots.push_back(c.slot);
    asked.push_back(c.asked_for);
    counts.push_back(c.check_count);
    attempts.push_back(c.attempts);
    own_max_checks.push_back(number_of(c.own.max_checks));
    own_max_attempts.push_back(number_of(c.own.max_attempts));
    own_backoff.push_back(seconds_of(c.own.backoff));
    own_backoff_max.push_back(seconds_of(c.own.backoff_max));
    max_checks.push_back(c.limits.max_checks);
    max_attempts.push_back(c.limits.max_attempts);
    backoff.push_back(seconds_of(c.limits.backoff));
    backoff_max.push_back(seconds_of(c.limits.backoff_max));
    for (const EventRecord& e : item.events) {
      event_checks.push_back(item.id);
      event_ids.emplace_back(e.id);
      event_types.emplace_back(e.type);
      event_sources.emplace_back(e.source);
      event_times.push_back(to_unix_micros(e.occurred_at));
      event_payloads.emplace_back(e.payload);
      event_traceparents.push_back(e.traceparent);
    }
  }
  const pq::Result settled = pq::exec(*prepared_, native_connection(db_), "cannot settle checks", kSettle,
                                      Settle{.ids = ids,
                                             .errors = errors,
                                             .answers = answers,
                                             .run_micros = run_micros,
                                             .payload_updates = payloads,
                                             .results = results,
                                             .due_us = due_us,
                                             .jobs = jobs,
                                             .slots = slots,
                                             .asked = asked,
                                             .check_counts = counts,
                                             .attempts = attempts,
                                             .own_max_checks = own_max_checks,
                                             .own_max_attempts = own_max_attempts,
                                             .own_backoff = own_backoff,
                                             .own_backoff_max = own_backoff_max,
                                             .max_checks = max_checks,
                                             .max_attempts = max_attempts,
                                             .backoff = backoff,
                                             .backoff_max = backoff_max,
                                             .max_horizon_seconds = judging.max_horizon.count(),
                                             .slot_seconds = judging.slot.count(),
                                             .all_done = std::all_of(items.begin(), items.end(),
                                                                     [](const SettleItem& i) {
                                                                       return !i.answer.failed && !i.answer.next;
                                                                     }),
                                             .lease_token = lease_token,
                                             .in_chunks = in_chunks,
                                             .now = now,
                                             .runner_id = runner_id,
                                             .event_ids = event_ids,
                                             .event_types = event_types,
                                             .event_sources = event_sources,
                                             .event_times = event_times,
                                             .event_payloads = event_payloads,
                                             .event_checks = event_checks,
                                             .event_traceparents = event_traceparents});
  Settlement out{.counts = {.checks = settled.integer(0, 0),
                            .events = settled.integer(0, 1),
                            .done = settled.integer(0, 2),
                            .rescheduled = settled.integer(0, 3),
                            .retried = settled.integer(0, 4),
                            .failed = settled.integer(0, 5),
                            .guarded = settled.integer(0, 6)},
                 .statements = static_cast<int>(settled.integer(0, 7))};
  for (int r = 0; r < settled.rows(); ++r) {
    if (!settled.null(r, 8)) out.refused.push_back({.id = settled.integer(r, 8), .reason = settled.text(r, 9)});
  }
  return out;
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

std::int64_t PgRunnerStore::lease(std::span<const std::int64_t> ids, const std::string& runner_id, TimePoint until) {
  const pq::Result token = pq::exec(native_connection(db_), "cannot lease checks", kLease,
                                    Lease{.runner_id = runner_id, .until = until, .ids = ids});
  return token.integer(0, 0);
}

std::vector<RunnerStore::BusinessDue> PgRunnerStore::business_due(std::span<const BusinessDelay> asked, TimePoint now) {
  std::vector<std::optional<std::string>> calendars, delays;
  for (const BusinessDelay& a : asked) {
    calendars.emplace_back(a.calendar);
    delays.emplace_back(a.delay);
  }
  const pq::Result rows = pq::exec(native_connection(db_), "cannot resolve answers in business time", kBusinessDue,
                                   BusinessDueOf{.calendars = calendars, .delays = delays, .now = now});
  std::vector<BusinessDue> out(rows.rows());
  for (int r = 0; r < rows.rows(); ++r) {
    out[r].problem = rows.optional_text(r, 0);
    if (!rows.null(r, 1)) out[r].at = rows.time(r, 1);
    if (const auto version = rows.optional_integer(r, 2)) out[r].calendar_version = static_cast<int>(*version);
  }
  return out;
}

void PgRunnerStore::name_business_runs(std::span<const SettleItem> runs, TimePoint since) {
  std::vector<std::int64_t> ids, dues, versions;
  std::vector<std::optional<std::string>> calendars, delays;
  for (const SettleItem& run : runs) {
    if (!run.timed_by) continue;
    ids.push_back(run.id);
    dues.push_back(to_unix_micros(run.due));
    calendars.emplace_back(run.timed_by->calendar);
    versions.push_back(run.timed_by->version);
    delays.emplace_back(run.timed_by->delay);
  }
  pq::exec(native_connection(db_), "cannot name the runs' calendars", kRunsTimedBy,
           RunsTimedBy{.ids = ids, .dues = dues, .calendars = calendars, .versions = versions, .delays = delays,
                       .since = since});
}

std::vector<std::int64_t> PgRunnerStore::lock_live_leases(std::span<const std::int64_t> ids, std::int64_t token,
                                                  TimePoint now) {
  const pq::Result rows = pq::exec(native_connection(db_), "cannot check leases", kLockLiveLeases,
                                   LockLiveLeases{.ids = ids, .token = token, .now = now});
  std::vector<std::int64_t> live;
  for (int r = 0; r < rows.rows(); ++r) live.push_back(rows.integer(r, 0));
  return live;
}

void PgRunnerStore::release(std::span<const std::int64_t> ids, std::int64_t token) {
  if (ids.empty()) return;
  pq::exec(native_connection(db_), "cannot release leases", kReleaseLeases, ReleaseLeases{.ids = ids, .token = token});
}

std::map<std::string, RunnerStore::ClassLimits> PgRunnerStore::class_limits(const std::map<std::string, JobPolicy>& coded,
                                                                             const JobPolicy& config) {
  std::vector<std::string> jobs;
  std::vector<std::optional<std::int64_t>> max_checks, max_attempts, backoff, backoff_max, timeout;
  for (const auto& [job, policy] : coded) {
    jobs.push_back(job);
    max_checks.push_back(number_of(policy.max_checks));
    max_attempts.push_back(number_of(policy.max_attempts));
    backoff.push_back(seconds_of(policy.backoff));
    backoff_max.push_back(seconds_of(policy.backoff_max));
    timeout.push_back(seconds_of(policy.timeout));
  }
  const pq::Result rows =
      pq::exec(native_connection(db_), "cannot resolve the job classes' limits", kClassLimits,
               ClassLimitsOf{.jobs = jobs,
                             .coded_max_checks = max_checks,
                             .coded_max_attempts = max_attempts,
                             .coded_backoff = backoff,
                             .coded_backoff_max = backoff_max,
                             .coded_timeout = timeout,
                             .config_max_checks = number_of(config.max_checks),
                             .config_max_attempts = number_of(config.max_attempts),
                             .config_backoff = seconds_of(config.backoff),
                             .config_backoff_max = seconds_of(config.backoff_max),
                             .config_timeout = seconds_of(config.timeout)});
  std::map<std::string, ClassLimits> out;
  for (int r = 0; r < rows.rows(); ++r) {
    out[rows.text(r, 0)] = {.limits = {.max_checks = static_cast<int>(rows.integer(r, 1)),
                                       .max_attempts = static_cast<int>(rows.integer(r, 2)),
                                       .backoff = optional_seconds(rows, r, 3),
                                       .backoff_max = optional_seconds(rows, r, 4)},
                            .timeout = std::chrono::seconds{rows.integer(r, 5)},
                            .coded_problem = rows.optional_text(r, 6),
                            .timeout_cut_from = optional_seconds(rows, r, 7)};
  }
  return out;
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
  const pq::Result rows = pq::exec(native_connection(db_), "cannot admit checks under their flow limits", kAdmit,
                                   Admit{.check_ids = ids,
                                         .limits = limits,
                                         .keys = keys,
                                         .now = now,
                                         .pace = pace,
                                         .longest_wait = wait,
                                         .places = places,
                                         .grace = kReservationGrace});
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
      native_connection(db_), "cannot look for deferred checks", kNextWaiting,
      NextWaiting{.slot = slot,
                  .next_slot = slot_end,
                  .claimable = {.now = now, .excluded_jobs = excluded.jobs, .excluded_ids = excluded.ids}});
  return row.optional_time(0, 0);
}

std::optional<TimePoint> PgRunnerStore::next_overdue_slot(TimePoint from, TimePoint until) {
  const pq::Result row = pq::exec(native_connection(db_), "cannot look for overdue checks", kNextOverdueSlot,
                                  NextOverdueSlot{.from = from, .until = until});
  return row.optional_time(0, 0);
}

std::int64_t PgRunnerStore::shift_slot(TimePoint slot, TimePoint to, int limit) {
  const pq::Result row = pq::exec(native_connection(db_), "cannot shift overdue checks", kShiftSlot,
                                  ShiftSlot{.to = to, .slot = slot, .limit = limit});
  return row.integer(0, 0);
}

Settings PgRunnerStore::read_settings() { return prescient::read_settings(db_); }

int PgRunnerStore::ensure_history_partitions(TimePoint now) { return prescient::ensure_history_partitions(db_, now); }

void PgRunnerStore::record_runner_seen(const std::string& runner_id, const std::string& shard, TimePoint slot,
                                       long claimed, TimePoint now) {
  prescient::record_runner_seen(db_, runner_id, shard, slot, claimed, now);
}

Micros PgRunnerStore::server_clock_offset(const Clock& local) { return prescient::server_clock_offset(db_, local); }

std::vector<std::string> PgRunnerStore::paused_classes() {
  const pq::Result rows = pq::exec(native_connection(db_), "cannot read the paused classes", kPausedClasses,
                                   PausedClasses{});
  std::vector<std::string> classes;
  for (int i = 0; i < rows.rows(); ++i) classes.push_back(rows.text(i, 0));
  return classes;
}

std::optional<TimePoint> PgRunnerStore::next_lease_end(TimePoint now, TimePoint before) {
  const pq::Result row = pq::exec(native_connection(db_), "cannot look for leases that end", kNextLeaseEnd,
                                  NextLeaseEnd{.now = now, .before = before});
  return row.optional_time(0, 0);
}

}  // namespace prescient::db
