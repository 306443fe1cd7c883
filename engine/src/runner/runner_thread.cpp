#include "runner/runner_thread.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <set>
#include <thread>

#include "core/text_rules.hpp"
#include "prescient/flow_limits.hpp"
#include "prescient/log.hpp"
#include "prescient/time_text.hpp"
#include "runner/abandoned_jobs.hpp"
#include "runner/batch_executor.hpp"
#include "runner/business_answers.hpp"
#include "runner/settlements.hpp"

namespace prescient::runner {

using namespace prescient::core;
namespace {

using runner::BatchExecutor;
using runner::Judging;
using runner::UnitResult;
using runner::WorkUnit;

// A written lease outlasts the batch's deadline, its slowest job's timeout and the executor's grace by
// this much, so a result in time is never discarded.
constexpr std::chrono::seconds kLeaseMargin{60};
// Flow control (docs/flow-control.md): a check whose limits let it start within this much of now is
// admitted and the runner thread waits for its start; a later one is deferred to its start. Capped by half
// the batch deadline, so a paced batch never runs into it.
constexpr Micros kFlowPace{1000000};
// A check without a concurrency place looks again this much later.
constexpr Micros kPlaceWait{250000};
// How often a runner thread looks again for deferred checks of its slot that another holds.
constexpr std::chrono::milliseconds kRecheck{50};
// After a refused settlement (RunnerThread::Impl::settle_isolating): how many batches start in chunks.
constexpr int kCarefulBatches = 16;
// Savepoint names are SQL identifiers, prescient's own, never input.
constexpr const char* kSavepoint = "prescient_settle";

}  // namespace

// One runner thread: its store (a session), an executor for the jobs, and the job class instances it made.
class RunnerThread::Impl {
 public:
  Impl(const RunnerOptions& options, const Registry& registry, const Clock& clock, const Settings& settings,
       std::unique_ptr<RunnerStore> store, JobSessionOpener open_job_session)
      : options_(options), registry_(registry), clock_(clock), settings_(settings), owned_store_(std::move(store)),
        store_(*owned_store_), open_job_session_(std::move(open_job_session)),
        executor_(std::make_unique<BatchExecutor>(open_job_session_)) {}

  // Claims and settles batches at `slot` until none is left, claiming after `mark` (shared with the other
  // runner threads draining the slot).
  SlotReport drain(TimePoint slot, ClaimMark& mark) {
    SlotReport report;
    report.slot = slot;
    unsettled_ = {};
    mark_ = &mark;
    load_limits();
    // Checks deferred within the slot are due at times up to its end (an overdue slot's, all of them).
    const TimePoint slot_end = grid_.floor(slot) + settings_.slot;
    while (!stopping()) {
      const auto batch_start = std::chrono::steady_clock::now();
      store_.begin();
      try {
        const RunnerStore::Exclusions excluded = exclusions();
        Claim claim = claim_batch(slot, slot_end, excluded);
        if (claim.rows.empty()) {
          if (!wait_in_slot(slot, slot_end, excluded)) return report;  // the slot is over: the rest is the sweep's
          continue;
        }
        settle_batch(std::move(claim), slot, batch_start, report);
      } catch (...) {
        store_.rollback();  // or the connection is gone: the server rolls back and the rows are free
        throw;
      }
    }
    return report;
  }

 private:
  // A batch as claimed, and whether it is of groups (grouped checks always take the fast path).
  struct Claim {
    RunnerStore::Claimed rows;
    bool grouped = false;
  };

  // Slow-path checks of a batch that may not start before a time, by id.
  using Starts = std::map<std::int64_t, TimePoint>;

  // A batch's checks by how they run. Long-running classes take the slow path: a written lease now, the
  // run after the commit. So do checks that flow limits apply to (`limited`, until admitted: their lease
  // holds a concurrency place; the run waits for the start their rate gives) and checks due later within
  // the slot (deferred there: the run waits for `starts`).
  struct Paths {
    std::vector<Check> fast, slow, limited;
    std::vector<RunnerStore::FlowPair> pairs;  // the limits that hold each limited check back
    Starts starts;
  };

  // The flow limits and the limits in force of the classes made, read once a slot (a change in the registry
  // takes effect within one), and the one fair share follows.
  void load_limits() {
    limits_ = store_.flow_limits();
    fair_limit_.reset();
    for (const FlowLimit& l : limits_) {
      if (l.fair_share && !fair_limit_) fair_limit_ = l;  // the first by name
    }
    if (classes_.empty()) return;
    std::map<std::string, JobPolicy> coded;
    for (const auto& [job, c] : classes_) coded.emplace(job, c.coded_policy);
    for (auto& [job, in_force] : store_.class_limits(coded, options_.default_policy)) {
      take_limits(job, classes_.at(job), std::move(in_force));
    }
  }

  // The next batch of the slot: fair share's pick first, then by due time (under flow limits, what is
  // due up to a pace ahead within the slot), then groups. Without limits, nothing is deferred: the claim
  // is what it always was.
  Claim claim_batch(TimePoint slot, TimePoint slot_end, const RunnerStore::Exclusions& excluded) {
    const TimePoint until = limits_.empty() ? slot : std::min(clock_.now() + pace(), slot_end - Micros{1});
    Claim claim;
    if (fair_limit_) claim.rows = claim_fairly(slot, excluded);
    if (claim.rows.empty()) claim.rows = claim_in_order(slot, until, excluded);
    if (claim.rows.empty()) {
      claim.rows = store_.claim_due_groups(slot, options_.group_batch, excluded);
      claim.grouped = true;
    }
    return claim;
  }

  // Due checks in claim order, after the mark the runner threads share (runner/claim_mark.hpp); when none is left
  // after it, from the slot's start. Under flow limits, which defer checks to times within the slot, from
  // the start always.
  RunnerStore::Claimed claim_in_order(TimePoint slot, TimePoint until, const RunnerStore::Exclusions& excluded) {
    const std::optional<ClaimKey> after = limits_.empty() ? mark_->get() : std::nullopt;
    RunnerStore::Claimed rows = store_.claim_due(slot, until, clock_.now(), options_.batch_size, excluded, after);
    if (rows.empty() && after) {
      rows = store_.claim_due(slot, until, clock_.now(), options_.batch_size, excluded, std::nullopt);
    }
    if (rows.last) mark_->advance(*rows.last);
    return rows;
  }

  // Fair share's claim: each value's part after that value's place (runner/claim_mark.hpp); when no value
  // has any left after its place, from each value's start. It looks at the slot's boundary only, where a
  // deferral never moves a check to.
  RunnerStore::Claimed claim_fairly(TimePoint slot, const RunnerStore::Exclusions& excluded) {
    const std::map<std::string, ClaimKey> after = mark_->by_value();
    RunnerStore::Claimed rows =
        store_.claim_due_fair(slot, clock_.now(), options_.batch_size, excluded, *fair_limit_, after);
    if (rows.empty() && !after.empty()) {
      rows = store_.claim_due_fair(slot, clock_.now(), options_.batch_size, excluded, *fair_limit_, {});
    }
    mark_->advance(rows.last_by_value);
    return rows;
  }

  // Nothing was claimed: ends the claim's transaction and says whether the runner thread stays in the slot (after
  // waiting) or the slot is drained. Under flow limits, checks deferred to later in the slot keep the
  // runner thread in it: it sleeps until the next is near, or a moment when the next is another's (claimed, or
  // running under a lease). So do checks of the slot another runner thread holds: they may be passed on to it (a
  // concurrency place free, but the other runs one check at a time). Without limits, a check left off the
  // grid (by another tool, or deferred before a limit was removed) is the sweep's.
  bool wait_in_slot(TimePoint slot, TimePoint slot_end, const RunnerStore::Exclusions& excluded) {
    const std::optional<TimePoint> waiting =
        limits_.empty() ? std::nullopt : store_.next_waiting(slot, slot_end, clock_.now(), excluded);
    store_.rollback();
    if (!waiting || clock_.now() >= slot_end) return false;
    if (*waiting - pace() > clock_.now()) wait_until(*waiting - pace());
    else std::this_thread::sleep_for(kRecheck);
    return true;
  }

  // Runs and settles a claimed batch in the claim's transaction, admits its limited checks, leases the slow
  // path's and commits; then runs the leased checks.
  void settle_batch(Claim claim, TimePoint slot, std::chrono::steady_clock::time_point batch_start,
                    SlotReport& report) {
    if (!report.first_claim_at) report.first_claim_at = clock_.now();
    const std::size_t claimed = claim.rows.checks.size() + claim.rows.unreadable.size();
    report.claimed += static_cast<long>(claimed);
    Paths paths = paths_of(std::move(claim.rows.checks), claim.grouped);
    const std::size_t settled = run_fast_path(std::move(paths.fast), claim, slot,
                                              batch_start + options_.batch_deadline, report);
    // Admitted last, just before the commit: the limits' state rows stay locked only that long.
    if (!paths.limited.empty()) admit(paths.limited, paths.pairs, paths.slow, paths.starts, report);
    std::optional<std::int64_t> token;
    if (!paths.slow.empty()) token = store_.lease(ids_of(paths.slow), options_.runner_id, lease_end(paths.slow));
    store_.commit();
    report.last_commit_at = clock_.now();
    report.batch_seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - batch_start).count());
    spdlog::debug("slot {} runner {}: settled {} of {} claimed", format_time(slot), options_.runner_id, settled,
                  claimed);
    if (token) {
      run_leased(paths.slow, paths.starts, *token, slot, report);
      report.last_commit_at = clock_.now();
    }
  }

  Paths paths_of(std::vector<Check> checks, bool grouped) {
    Paths paths;
    for (Check& c : checks) {
      if (!grouped && add_flow_pairs(c, paths.pairs)) paths.limited.push_back(std::move(c));
      else if (!grouped && c.slot > clock_.now()) {
        paths.starts[c.id] = c.slot;
        paths.slow.push_back(std::move(c));
      } else {
        (!grouped && class_of(c.job).long_running ? paths.slow : paths.fast).push_back(std::move(c));
      }
    }
    return paths;
  }

  // Runs the fast path's checks and settles them, with the claimed rows whose payload cannot be read (each
  // fails alone, without a run), in the claim's transaction. Returns how many were settled.
  std::size_t run_fast_path(std::vector<Check> fast, const Claim& claim, TimePoint slot,
                            std::chrono::steady_clock::time_point deadline, SlotReport& report) {
    const auto batch = std::make_shared<const std::vector<Check>>(std::move(fast));
    std::vector<SettleItem> items = run(batch, claim.grouped, slot, deadline);
    std::vector<const Check*> checks;
    for (const Check& c : *batch) checks.push_back(&c);
    for (const auto& [check, reason] : claim.rows.unreadable) {
      checks.push_back(&check);
      items.push_back(runner::failed_attempt(check, class_of(check.job).in_force.limits, reason));
      log_failure(slot, check, reason);
    }
    const Settled settled = settle_isolating(std::move(items), checks, std::nullopt, slot);
    tally(settled.counts, report);
    return settled.settled;
  }

  // A job class as this runner thread runs it: its instance, and its policy over the database's settings.
  struct JobClass {
    std::shared_ptr<JobExec> exec;  // null when the class cannot run (its checks fail with `refusal`)
    std::string refusal;
    JobPolicy coded_policy;  // the one its code declares (JobExec::policy()), under the registry's row
    RunnerStore::ClassLimits in_force;
    bool long_running = false;
    bool batch = false;  // with long_running: its checks of a batch run as one unit (run_batch)
  };

  // What this runner thread settled: how many checks (culprits as failed attempts), what became of them and the
  // events the outbox took, and the checks the database refused to settle in any form.
  struct Settled {
    std::size_t settled = 0;
    runner::SettledCounts counts;
    std::vector<std::int64_t> refused;
  };

  // A class that cannot be made, or whose policy makes no sense, fails its checks: never the batch.
  const JobClass& class_of(const std::string& job) {
    const auto it = classes_.find(job);
    if (it != classes_.end()) return it->second;
    JobClass c;
    JobPolicy policy;
    try {
      if (!registry_.contains(job)) {
        c.refusal = "unknown job class '" + job + "' (is its plugin loaded?)";
      } else if (!(c.exec = registry_.create(job))) {
        c.refusal = "job class '" + job + "' made no instance";
      } else {
        policy = c.exec->policy();
      }
    } catch (const std::exception& e) {
      c.refusal = "job class '" + job + "' could not be made: " + storable_text(e.what(), kMaxErrorBytes);
    } catch (...) {
      c.refusal = "job class '" + job + "' could not be made: it threw a non-standard exception";
    }
    if (!c.refusal.empty()) {
      c.exec.reset();
      policy = {};
    }
    RunnerStore::ClassLimits in_force = store_.class_limits({{job, policy}}, options_.default_policy).at(job);
    if (in_force.coded_problem) {
      c.refusal = "job class '" + job + "' has an invalid policy: " + *in_force.coded_problem;
      c.exec.reset();
      policy = {};
      in_force.coded_problem.reset();
    }
    c.coded_policy = policy;
    c.long_running = policy.long_running;
    c.batch = policy.long_running && policy.batch;
    take_limits(job, c, std::move(in_force));
    return classes_.emplace(job, std::move(c)).first->second;
  }

  // Takes a class's limits in force (prescient.class_limits resolves them: docs/guarantees.md, "Policies").
  // A registry's timeout beyond a day is cut to a day, with a warning when the limits first take it.
  void take_limits(const std::string& job, JobClass& c, RunnerStore::ClassLimits in_force) const {
    if (in_force.timeout_cut_from && in_force != c.in_force) {
      spdlog::warn("runner {}: the registry's timeout for class {} ({}s) is beyond a day: a day is used",
                   options_.runner_id, job, in_force.timeout_cut_from->count());
    }
    c.in_force = std::move(in_force);
  }

  // What the settle statement's judge needs besides the checks (a late run never reschedules into the past:
  // at the earliest, the next boundary from the settlement's now).
  Judging judging() const { return {.slot = settings_.slot, .max_horizon = settings_.max_horizon}; }

  bool stopping() const { return options_.stop_requested && options_.stop_requested->load(); }

  Micros pace() const {
    return std::min(kFlowPace, std::chrono::duration_cast<Micros>(options_.batch_deadline) / 2);
  }

  // Sleeps until `t` on the runner's clock, waking to see a stop request.
  void wait_until(TimePoint t) const {
    while (!stopping()) {
      const Micros left = t - clock_.now();
      if (left <= Micros{0}) return;
      std::this_thread::sleep_for(std::min(left, Micros{100000}));
    }
  }

  // The pairs of (limit, key value) for the limits that hold `check` back (a rate, a concurrency; fair
  // share orders the claim instead); true when any does.
  bool add_flow_pairs(const Check& check, std::vector<RunnerStore::FlowPair>& pairs) const {
    bool any = false;
    for (const FlowLimit& limit : limits_) {
      if (!limit.rate && !limit.concurrency) continue;
      if (auto key = flow_key_of(limit, check)) {
        pairs.push_back({.id = check.id, .limit = limit.name, .key = std::move(*key)});
        any = true;
      }
    }
    return any;
  }

  // Admits the limited checks: those admitted join the slow path with their start; the others were moved
  // by the database to when their budget allows.
  void admit(std::vector<Check>& limited, const std::vector<RunnerStore::FlowPair>& pairs, std::vector<Check>& slow,
             Starts& starts, SlotReport& report) {
    // The executor runs one check at a time, but for a class that takes its batch whole (JobPolicy::batch):
    // a runner thread takes no more concurrency places than it can use at once.
    const bool together = std::any_of(limited.begin(), limited.end(), [&](const Check& c) { return class_of(c.job).batch; });
    std::map<std::int64_t, RunnerStore::Admission> verdicts;
    for (RunnerStore::Admission& a : store_.admit(pairs, clock_.now(), pace(), kPlaceWait, together ? 1000000 : 1)) {
      verdicts[a.id] = a;
    }
    for (Check& c : limited) {
      const auto it = verdicts.find(c.id);
      if (it == verdicts.end() || it->second.start) {
        starts[c.id] = it == verdicts.end() ? c.slot : *it->second.start;
        slow.push_back(std::move(c));
        continue;
      }
      if (!it->second.deferred_by) continue;  // passed on: due at its start, for another runner thread
      ++report.deferred;
      spdlog::debug("slot {} runner {}: check {} deferred by limit {} until {}", format_time(c.slot),
                    options_.runner_id, c.id, it->second.deferred_by.value_or("?"),
                    it->second.until ? format_time(*it->second.until) : std::string("?"));
    }
  }

  // Classes with too many abandoned jobs still running, and what this drain could not settle.
  RunnerStore::Exclusions exclusions() {
    RunnerStore::Exclusions excluded{.jobs = runner::AbandonedJobs::process().at_cap(options_.max_abandoned_per_class),
                               .ids = unsettled_.ids,
                               .groups = unsettled_.groups};
    if (excluded.jobs != capped_) {
      for (const std::string& job : excluded.jobs) {
        if (std::find(capped_.begin(), capped_.end(), job) == capped_.end()) {
          spdlog::warn("runner {}: {} jobs of class {} did not return and still hold their threads; taking no "
                       "more {} checks until one returns",
                       options_.runner_id, runner::AbandonedJobs::process().running(job), job, job);
        }
      }
      for (const std::string& job : capped_) {
        if (std::find(excluded.jobs.begin(), excluded.jobs.end(), job) == excluded.jobs.end()) {
          spdlog::info("runner {}: taking {} checks again", options_.runner_id, job);
        }
      }
      capped_ = excluded.jobs;
    }
    return excluded;
  }

  static std::vector<std::int64_t> ids_of(const std::vector<Check>& checks) {
    std::vector<std::int64_t> ids;
    for (const Check& c : checks) ids.push_back(c.id);
    return ids;
  }

  // Long enough for the batch's deadline plus its slowest class, with room for the settlement: no job
  // starts after the deadline, and the one running then ends within its timeout (or is abandoned).
  TimePoint lease_end(const std::vector<Check>& checks) {
    std::chrono::seconds longest = settings_.job_timeout;
    for (const Check& c : checks) longest = std::max(longest, class_of(c.job).in_force.timeout);
    return clock_.now() + pace() + options_.batch_deadline + longest + runner::kTimeoutGrace + kLeaseMargin;
  }

  // The slow path: run outside any transaction, then settle fenced by the lease token.
  void run_leased(const std::vector<Check>& checks, const Starts& starts, std::int64_t token, TimePoint slot,
                  SlotReport& report) {
    const auto batch = std::make_shared<const std::vector<Check>>(checks);
    std::vector<SettleItem> items =
        run_paced(*batch, starts, slot, std::chrono::steady_clock::now() + options_.batch_deadline);
    std::set<std::int64_t> unrun;
    for (const Check& c : checks) unrun.insert(c.id);
    for (const SettleItem& item : items) unrun.erase(item.id);
    store_.begin();
    try {
      // Only checks whose lease is still ours and live are settled (and their writes run); the rest
      // were rescued by another runner after the lease expired.
      std::vector<std::int64_t> ran;
      for (const SettleItem& item : items) ran.push_back(item.id);
      const std::vector<std::int64_t> locked = store_.lock_live_leases(ran, token, clock_.now());
      const std::set<std::int64_t> live(locked.begin(), locked.end());
      std::vector<SettleItem> settleable;
      for (SettleItem& item : items) {
        if (live.contains(item.id)) settleable.push_back(std::move(item));
      }
      const long discarded = static_cast<long>(items.size() - settleable.size());
      std::vector<const Check*> index;
      for (const Check& c : *batch) index.push_back(&c);
      const Settled settled = settle_isolating(std::move(settleable), index, token, slot);
      // Not run (past the deadline) or refused by the database: the lease is given up, due again at once.
      unrun.insert(settled.refused.begin(), settled.refused.end());
      store_.release(std::vector<std::int64_t>(unrun.begin(), unrun.end()), token);
      store_.commit();
      tally(settled.counts, report);
      if (discarded > 0) {
        report.discarded += discarded;
        spdlog::warn("runner {}: discarded {} results whose lease had expired", options_.runner_id, discarded);
      }
    } catch (...) {
      store_.rollback();  // or the connection is gone: the leases expire and the checks are rescued
      throw;
    }
  }

  // Runs leased checks, none before its start (flow control's, or a deferred check's time); those that
  // may start together run as one batch.
  std::vector<SettleItem> run_paced(const std::vector<Check>& checks, const Starts& starts, TimePoint slot,
                                    std::chrono::steady_clock::time_point deadline) {
    const auto start_of = [&](const Check& c) {
      const auto it = starts.find(c.id);
      return it == starts.end() ? TimePoint{} : it->second;
    };
    std::vector<Check> pending(checks.begin(), checks.end());
    std::stable_sort(pending.begin(), pending.end(),
                     [&](const Check& a, const Check& b) { return start_of(a) < start_of(b); });
    std::vector<SettleItem> items;
    std::size_t next = 0;
    // How late this runner thread runs its starts: once behind (a first connection, a slow job), it keeps the
    // spacing of the starts that follow instead of running the ones overdue at once.
    Micros lag{0};
    while (next < pending.size() && std::chrono::steady_clock::now() < deadline) {
      const TimePoint first = start_of(pending[next]);
      if (first != TimePoint{}) {
        wait_until(first + lag);
        if (stopping() && first + lag > clock_.now()) break;
        lag = std::max(lag, clock_.now() - first);
      }
      const TimePoint now = clock_.now();
      std::vector<Check> ready;
      while (next < pending.size() && start_of(pending[next]) + lag <= now) {
        ready.push_back(std::move(pending[next++]));
      }
      // A class that runs its checks together (JobPolicy::batch) gets them side by side, one unit.
      std::stable_sort(ready.begin(), ready.end(), [](const Check& a, const Check& b) { return a.job < b.job; });
      std::vector<SettleItem> ran = run(std::make_shared<const std::vector<Check>>(std::move(ready)), false, slot, deadline);
      items.insert(items.end(), std::make_move_iterator(ran.begin()), std::make_move_iterator(ran.end()));
    }
    return items;
  }

  // Grouped checks arrive ordered by group: consecutive checks of one group and class form one unit.
  std::vector<WorkUnit> units_of(const std::vector<Check>& checks, bool grouped) {
    std::vector<WorkUnit> units;
    for (std::size_t i = 0; i < checks.size(); ++i) {
      const JobClass& job = class_of(checks[i].job);
      const bool same_class = !units.empty() && checks[i].job == checks[i - 1].job;
      const bool extends = same_class && (grouped ? checks[i].group_key == checks[i - 1].group_key : units.back().batched);
      if (extends) {
        ++units.back().count;
        continue;
      }
      units.push_back({.exec = job.exec, .job = checks[i].job, .refusal = job.refusal, .first = i, .count = 1,
                       .grouped = grouped, .batched = !grouped && job.batch && job.exec != nullptr,
                       .timeout = std::chrono::duration_cast<std::chrono::milliseconds>(job.in_force.timeout)});
    }
    return units;
  }

  std::vector<SettleItem> run(const runner::SharedChecks& batch, bool grouped, TimePoint slot,
                              std::chrono::steady_clock::time_point deadline) {
    const std::vector<Check>& checks = *batch;
    if (checks.empty()) return {};
    const auto shared_units = std::make_shared<const std::vector<WorkUnit>>(units_of(checks, grouped));
    const std::vector<WorkUnit>& units = *shared_units;
    std::vector<GuardLimits> limits;
    for (const WorkUnit& unit : units) limits.push_back(class_of(unit.job).in_force.limits);
    const std::vector<UnitResult> results =
        executor_->run(batch, shared_units, slot, clock_, settings_.slot, settings_.max_horizon, deadline);
    if (executor_->timed_out()) {
      // The stuck thread keeps its job instances; this runner thread starts afresh.
      executor_ = std::make_unique<BatchExecutor>(open_job_session_);
      classes_.clear();
    }
    std::vector<SettleItem> items = runner::settlements_of(checks, units, results, limits);
    for (const auto& [index, reason] : runner::resolve_business_answers(items, store_, clock_.now())) {
      const auto check = std::ranges::find(checks, items[index].id, &Check::id);
      items[index] = runner::failed_attempt(*check, class_of(check->job).in_force.limits, reason,
                                            items[index].run_micros);
    }
    const bool log_runs = spdlog::should_log(spdlog::level::debug);
    for (const SettleItem& item : items) {
      if (!item.answer.failed && !log_runs) continue;
      const auto check = std::find_if(checks.begin(), checks.end(), [&](const Check& c) { return c.id == item.id; });
      if (item.answer.failed) {
        log_failure(slot, *check, item.answer.error);
      } else {
        const LogTrace trace(check->traceparent);
        spdlog::debug("slot {} runner {}: job {} ran check {}: {}", format_time(slot), options_.runner_id, check->job,
                      check->id, item.answer.next ? "next " + format_time(*item.answer.next) : std::string("done"));
      }
    }
    return items;
  }

  void log_failure(TimePoint slot, const Check& check, const std::string& error) const {
    const LogTrace trace(check.traceparent);
    spdlog::warn("slot {} runner {}: job {} failed for check {}: {}", format_time(slot), options_.runner_id,
                 check.job, check.id, one_line(error));
  }

  // Runs the items' buffered writes and settles them in the open transaction. The server finds a check it
  // refuses for its values and leaves it unsettled, the others settled (RunnerStore::settle; a refused part
  // costs no round trip there). Each culprit is then settled as a failed attempt naming the refusal (no
  // events, no writes, no payload update, no result); a check the database refuses even that is left
  // unsettled (its row is released at the commit) and left out of this drain's claims.
  //
  // A culprit's writes must not stand: a batch with writes sets a savepoint before them, and when a culprit
  // had any, goes back to it and settles again with the culprits as failed attempts. A batch without writes
  // sets none. After a refusal the next kCarefulBatches batches start in chunks, where another refusal
  // costs its chunk, not its batch (docs/performance.md, "A refused settlement in the server").
  Settled settle_isolating(std::vector<SettleItem> items, const std::vector<const Check*>& checks,
                           std::optional<std::int64_t> token, TimePoint slot) {
    Settled out;
    if (items.empty()) return out;
    const TimePoint since = clock_.now();  // the settlement's now at the latest, for name_business_runs
    const bool in_chunks = careful_batches_ > 0;
    if (in_chunks) --careful_batches_;
    const bool writes = std::ranges::any_of(items, [](const SettleItem& i) { return !i.writes.empty(); });
    if (writes) store_.savepoint(kSavepoint);
    apply_writes(items, checks);
    const RunnerStore::Settlement first = settle(items, token, in_chunks);
    out.counts = first.counts;
    out.settled = items.size() - first.refused.size();
    if (first.refused.empty()) {
      name_business_runs(items, {}, since);
      return out;
    }

    careful_batches_ = kCarefulBatches;
    spdlog::warn("slot {} runner {}: the database refused the settlement of {} of {} checks for their values "
                 "(found in {} statements); each fails alone",
                 format_time(slot), options_.runner_id, first.refused.size(), items.size(), first.statements);
    std::map<std::int64_t, std::string> reasons;
    for (const RunnerStore::Refused& r : first.refused) {
      reasons[r.id] = "the database refused its settlement: " + r.reason;
    }
    const auto as_failed_attempt = [&](const SettleItem& item) {
      const Check& check = check_of(item.id, checks);
      return runner::failed_attempt(check, class_of(check.job).in_force.limits, reasons.at(item.id), item.run_micros);
    };
    const bool culprit_wrote = std::ranges::any_of(
        items, [&](const SettleItem& i) { return reasons.contains(i.id) && !i.writes.empty(); });
    RunnerStore::Settlement again;
    if (culprit_wrote) {
      store_.rollback_to(kSavepoint);
      for (SettleItem& item : items) {
        if (reasons.contains(item.id)) item = as_failed_attempt(item);
      }
      apply_writes(items, checks);
      again = settle(items, token, true);
      out.counts = again.counts;
      out.settled = items.size();
      name_business_runs(items, {}, since);
    } else {
      std::vector<SettleItem> failed;
      for (const SettleItem& item : items) {
        if (reasons.contains(item.id)) failed.push_back(as_failed_attempt(item));
      }
      again = settle(failed, token, true);
      out.counts += again.counts;
      out.settled += failed.size();
      name_business_runs(items, reasons, since);
    }
    std::set<std::int64_t> unsettled;
    for (const RunnerStore::Refused& r : again.refused) {
      const Check& check = check_of(r.id, checks);
      spdlog::error("slot {} runner {}: the database refuses any settlement of check {} ({}); it stays pending, "
                    "left for the next sweep",
                    format_time(slot), options_.runner_id, check.id, one_line(r.reason));
      unsettled.insert(r.id);
      out.refused.push_back(r.id);
      unsettled_.ids.push_back(r.id);
      if (check.group_key) unsettled_.groups.push_back(*check.group_key);
    }
    out.settled -= unsettled.size();
    for (const auto& [id, reason] : reasons) {
      if (!unsettled.contains(id)) log_failure(slot, check_of(id, checks), reason);
    }
    return out;
  }

  // The timeline rows of the settled runs that answered in business time name what computed their time; the
  // runs refused (and settled as failed attempts instead) are left out. No statement when none did.
  void name_business_runs(const std::vector<SettleItem>& items, const std::map<std::int64_t, std::string>& refused,
                          TimePoint since) {
    std::vector<SettleItem> timed;
    for (const SettleItem& item : items) {
      if (item.timed_by && !refused.contains(item.id)) timed.push_back(item);
    }
    if (!timed.empty()) store_.name_business_runs(timed, since);
  }

  RunnerStore::Settlement settle(std::span<const SettleItem> items, std::optional<std::int64_t> token,
                                 bool in_chunks) {
    return store_.settle(items, options_.runner_id, clock_.now(), token, judging(), in_chunks);
  }

  static const Check& check_of(std::int64_t id, const std::vector<const Check*>& checks) {
    return **std::find_if(checks.begin(), checks.end(), [&](const Check* c) { return c->id == id; });
  }

  // Runs the items' buffered writes; a check whose writes fail is judged as a failed run instead
  // (retried, its error kept) and its events are dropped with its writes.
  void apply_writes(std::vector<SettleItem>& items, const std::vector<const Check*>& checks) {
    const auto failures = store_.apply_writes(items);
    for (const auto& [index, error] : failures) {
      SettleItem& item = items[index];
      const Check& check = check_of(item.id, checks);
      item = runner::failed_attempt(check, class_of(check.job).in_force.limits, error, item.run_micros);
      log_failure(check.slot, check, error);
    }
  }

  const RunnerOptions& options_;
  const Registry& registry_;
  const Clock& clock_;
  const Settings& settings_;
  const SlotGrid grid_{settings_.grid()};
  std::unique_ptr<RunnerStore> owned_store_;
  RunnerStore& store_;
  JobSessionOpener open_job_session_;  // each executor's, a new one after a timeout
  std::unique_ptr<BatchExecutor> executor_;
  std::map<std::string, JobClass> classes_;
  RunnerStore::Exclusions unsettled_;        // checks the database refused to settle, left out of this drain
  std::vector<FlowLimit> limits_;            // the flow limits in force, read when the drain began
  std::optional<FlowLimit> fair_limit_;      // the fair-share limit whose payload field claims interleave by
  ClaimMark* mark_ = nullptr;                // how far the slot's runner threads have claimed, set by drain
  std::vector<std::string> capped_;    // classes this runner thread last saw at the abandoned-thread cap
  int careful_batches_ = 0;            // batches still to settle in chunks since the last refusal
};

RunnerThread::RunnerThread(const RunnerOptions& options, const Registry& registry, const Clock& clock,
                           const Settings& settings, std::unique_ptr<RunnerStore> store,
                           JobSessionOpener open_job_session)
    : impl_(std::make_unique<Impl>(options, registry, clock, settings, std::move(store), std::move(open_job_session))) {}
RunnerThread::~RunnerThread() = default;

SlotReport RunnerThread::drain(TimePoint slot) {
  ClaimMark unshared;
  return impl_->drain(slot, unshared);
}
SlotReport RunnerThread::drain(TimePoint slot, ClaimMark& mark) { return impl_->drain(slot, mark); }

}  // namespace prescient::runner
