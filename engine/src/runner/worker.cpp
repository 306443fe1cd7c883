#include "runner/worker.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/text_rules.hpp"
#include "prescient/errors.hpp"
#include "prescient/time_text.hpp"
#include "runner/abandoned_jobs.hpp"
#include "runner/batch_executor.hpp"
#include "runner/settlements.hpp"

namespace prescient {
namespace {

using detail::BatchExecutor;
using detail::Judging;
using detail::UnitResult;
using detail::WorkUnit;

// A written lease outlasts the batch's deadline, its slowest job's timeout and the executor's grace by
// this much, so a result in time is never discarded.
constexpr std::chrono::seconds kLeaseMargin{60};
// The longest timeout a class's policy may ask for: deadlines computed from it must not overflow.
constexpr std::chrono::seconds kMaxJobTimeout{86400};

std::optional<std::string> policy_problem(const JobPolicy& policy) {
  if (policy.max_checks && *policy.max_checks < 1) return "max_checks " + std::to_string(*policy.max_checks) + " < 1";
  if (policy.max_attempts && *policy.max_attempts < 1) {
    return "max_attempts " + std::to_string(*policy.max_attempts) + " < 1";
  }
  if (policy.timeout && (*policy.timeout < std::chrono::seconds{1} || *policy.timeout > kMaxJobTimeout)) {
    return "timeout " + std::to_string(policy.timeout->count()) + "s is not within 1s to 1d";
  }
  return std::nullopt;
}

}  // namespace

// One worker: its store (a session), an executor for the jobs, and the job class instances it made.
class Worker::Impl {
 public:
  Impl(const RunnerOptions& options, const Registry& registry, const Clock& clock, const Settings& settings,
       std::unique_ptr<RunnerStore> store)
      : options_(options), registry_(registry), clock_(clock), settings_(settings), owned_store_(std::move(store)),
        store_(*owned_store_), executor_(std::make_unique<BatchExecutor>(options.database_url)) {}

  // Claims and settles batches at `slot` until none is left.
  SlotReport drain(TimePoint slot) {
    SlotReport report;
    report.slot = slot;
    unsettled_ = {};
    while (!(options_.stop_requested && options_.stop_requested->load())) {
      const auto batch_start = std::chrono::steady_clock::now();
      store_.begin();
      try {
        const RunnerStore::Exclusions excluded = exclusions();
        RunnerStore::Claimed claimed = store_.claim_due(slot, clock_.now(), options_.batch_size, excluded);
        bool grouped = false;
        if (claimed.empty()) {
          claimed = store_.claim_due_groups(slot, options_.group_batch, excluded);
          grouped = true;
        }
        if (claimed.empty()) {
          store_.rollback();
          return report;
        }
        if (!report.first_claim_at) report.first_claim_at = clock_.now();
        report.claimed += static_cast<long>(claimed.checks.size() + claimed.unreadable.size());
        const auto deadline = batch_start + options_.batch_deadline;
        // Long-running classes take the slow path: a written lease now, the run after the commit.
        std::vector<Check> fast, slow;
        for (Check& c : claimed.checks) (!grouped && class_of(c.job).long_running ? slow : fast).push_back(std::move(c));
        // A class that runs its checks together (JobPolicy::batch) gets them side by side, one unit.
        std::stable_sort(slow.begin(), slow.end(), [](const Check& a, const Check& b) { return a.job < b.job; });
        const auto batch = std::make_shared<const std::vector<Check>>(std::move(fast));
        std::vector<SettleItem> items = run(batch, grouped, slot, deadline);
        // A row whose payload cannot be read fails alone, without a run.
        std::vector<const Check*> checks;
        for (const Check& c : *batch) checks.push_back(&c);
        for (const auto& [check, reason] : claimed.unreadable) {
          checks.push_back(&check);
          items.push_back(detail::failed_attempt(check, class_of(check.job).limits, judging(), reason));
          log_failure(slot, check, reason);
        }
        const Settled settled = settle_isolating(std::move(items), checks, std::nullopt, slot);
        tally(settled.items, settled.events, report);
        std::optional<std::int64_t> token;
        if (!slow.empty()) token = store_.lease(ids_of(slow), options_.runner_id, lease_end(slow));
        store_.commit();
        report.last_commit_at = clock_.now();
        report.batch_seconds.push_back(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - batch_start).count());
        spdlog::debug("slot {} runner {}: settled {} of {} claimed", format_time(slot), options_.runner_id,
                      settled.items.size(), claimed.checks.size() + claimed.unreadable.size());
        if (token) {
          run_leased(slow, *token, slot, report);
          report.last_commit_at = clock_.now();
        }
      } catch (...) {
        store_.rollback();  // or the connection is gone: the server rolls back and the rows are free
        throw;
      }
    }
    return report;
  }

 private:
  // A job class as this worker runs it: its instance, and its policy over the database's settings.
  struct JobClass {
    std::shared_ptr<JobExec> exec;  // null when the class cannot run (its checks fail with `refusal`)
    std::string refusal;
    GuardLimits limits;
    std::chrono::seconds timeout;
    bool long_running = false;
    bool batch = false;  // with long_running: its checks of a batch run as one unit (run_batch)
  };

  // What this worker settled: the items as written (culprits turned into failed attempts), the events
  // the outbox took, and the checks the database refused to settle in any form.
  struct Settled {
    std::vector<SettleItem> items;
    std::int64_t events = 0;
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
      } else if (const auto problem = policy_problem(policy = c.exec->policy())) {
        c.refusal = "job class '" + job + "' has an invalid policy: " + *problem;
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
    c.limits = {.max_checks = policy.max_checks.value_or(settings_.max_checks),
                .max_attempts = policy.max_attempts.value_or(settings_.max_attempts),
                .max_horizon = settings_.max_horizon};
    c.timeout = policy.timeout.value_or(settings_.job_timeout);
    c.long_running = policy.long_running;
    c.batch = policy.long_running && policy.batch;
    return classes_.emplace(job, std::move(c)).first->second;
  }

  Judging judging() const {
    // A late run (a sweep) never reschedules into the past: at the earliest, the next boundary from now.
    return {.grid = grid_, .earliest = grid_.floor(clock_.now()) + settings_.slot};
  }

  // Classes with too many abandoned jobs still running, and what this drain could not settle.
  RunnerStore::Exclusions exclusions() {
    RunnerStore::Exclusions excluded{.jobs = detail::AbandonedJobs::process().at_cap(options_.max_abandoned_per_class),
                               .ids = unsettled_.ids,
                               .groups = unsettled_.groups};
    if (excluded.jobs != capped_) {
      for (const std::string& job : excluded.jobs) {
        if (std::find(capped_.begin(), capped_.end(), job) == capped_.end()) {
          spdlog::warn("runner {}: {} jobs of class {} did not return and still hold their threads; taking no "
                       "more {} checks until one returns",
                       options_.runner_id, detail::AbandonedJobs::process().running(job), job, job);
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
    for (const Check& c : checks) longest = std::max(longest, class_of(c.job).timeout);
    return clock_.now() + options_.batch_deadline + longest + detail::kTimeoutGrace + kLeaseMargin;
  }

  // The slow path: run outside any transaction, then settle fenced by the lease token.
  void run_leased(const std::vector<Check>& checks, std::int64_t token, TimePoint slot, SlotReport& report) {
    const auto batch = std::make_shared<const std::vector<Check>>(checks);
    std::vector<SettleItem> items = run(batch, false, slot, std::chrono::steady_clock::now() + options_.batch_deadline);
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
      tally(settled.items, settled.events, report);
      if (discarded > 0) {
        report.discarded += discarded;
        spdlog::warn("runner {}: discarded {} results whose lease had expired", options_.runner_id, discarded);
      }
    } catch (...) {
      store_.rollback();  // or the connection is gone: the leases expire and the checks are rescued
      throw;
    }
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
                       .timeout = std::chrono::duration_cast<std::chrono::milliseconds>(job.timeout)});
    }
    return units;
  }

  std::vector<SettleItem> run(const detail::SharedChecks& batch, bool grouped, TimePoint slot,
                              std::chrono::steady_clock::time_point deadline) {
    const std::vector<Check>& checks = *batch;
    if (checks.empty()) return {};
    const auto shared_units = std::make_shared<const std::vector<WorkUnit>>(units_of(checks, grouped));
    const std::vector<WorkUnit>& units = *shared_units;
    std::vector<GuardLimits> limits;
    for (const WorkUnit& unit : units) limits.push_back(class_of(unit.job).limits);
    const std::vector<UnitResult> results =
        executor_->run(batch, shared_units, slot, clock_, settings_.slot, settings_.max_horizon, deadline);
    if (executor_->timed_out()) {
      // The stuck thread keeps its job instances; this worker starts afresh.
      executor_ = std::make_unique<BatchExecutor>(options_.database_url);
      classes_.clear();
    }
    std::vector<SettleItem> items = detail::settlements_of(checks, units, results, limits, judging());
    for (const SettleItem& item : items) {
      if (item.settlement.last_error && item.settlement.attempts > 0) {
        const auto check = std::find_if(checks.begin(), checks.end(), [&](const Check& c) { return c.id == item.id; });
        log_failure(slot, *check, *item.settlement.last_error);
      }
    }
    return items;
  }

  void log_failure(TimePoint slot, const Check& check, const std::string& error) const {
    spdlog::warn("slot {} runner {}: job {} failed for check {}: {}", format_time(slot), options_.runner_id,
                 check.job, check.id, one_line(error));
  }

  // Runs the items' buffered writes and settles them in the open transaction. A statement refused for
  // the values of one item (prescient/errors.hpp) does not fail the others: the settlement is rolled
  // back to its savepoint and retried in halves, down to the culprits, which become failed attempts
  // naming the refusal (no events, no writes). A check the database refuses even that is left unsettled
  // (its row is released at the commit) and left out of this drain's claims. When nothing is refused
  // this costs one savepoint per batch.
  Settled settle_isolating(std::vector<SettleItem> items, const std::vector<const Check*>& checks,
                           std::optional<std::int64_t> token, TimePoint slot) {
    Settled out;
    if (items.empty()) return out;
    const std::string savepoint = "prescient_settle";
    store_.savepoint(savepoint);
    if (try_settle(items, checks, token, out)) return out;
    store_.rollback_to(savepoint);
    spdlog::warn("slot {} runner {}: the database refused the settlement of {} checks for one item's values; "
                 "settling them in halves to find it",
                 format_time(slot), options_.runner_id, items.size());
    settle_halves(items, checks, token, slot, 1, out);
    return out;
  }

  // Applies the writes of `items` and settles them; false, with the transaction left for the caller to
  // roll back to its savepoint, when the database refused a value; other failures throw.
  bool try_settle(std::vector<SettleItem>& items, const std::vector<const Check*>& checks,
                  std::optional<std::int64_t> token, Settled& out) {
    apply_writes(items, checks);
    try {
      const RunnerStore::Settled settled = store_.settle(items, options_.runner_id, clock_.now(), token);
      out.events += settled.events;
      out.items.insert(out.items.end(), std::make_move_iterator(items.begin()), std::make_move_iterator(items.end()));
      return true;
    } catch (const DatabaseError& e) {
      if (!refused_for_its_values(e.sqlstate())) throw;
      last_refusal_ = std::string(e.what()) + " (SQLSTATE " + e.sqlstate() + ")";
      return false;
    }
  }

  // Settles `items` under a savepoint of its own: released when they settled, rolled back to (leaving
  // the transaction as it was) when the database refused a value.
  bool settle_under_savepoint(const std::string& savepoint, std::vector<SettleItem>& items,
                              const std::vector<const Check*>& checks, std::optional<std::int64_t> token,
                              Settled& out) {
    store_.savepoint(savepoint);
    const bool settled = try_settle(items, checks, token, out);
    if (!settled) store_.rollback_to(savepoint);
    store_.release_savepoint(savepoint);
    return settled;
  }

  // `items` were refused together: settle each half under a savepoint of its own, and split the halves
  // refused again, down to single culprits.
  void settle_halves(std::span<const SettleItem> items, const std::vector<const Check*>& checks,
                     std::optional<std::int64_t> token, TimePoint slot, int depth, Settled& out) {
    const std::string savepoint = "prescient_settle_" + std::to_string(depth);
    if (items.size() == 1) {
      const Check& check = check_of(items.front().id, checks);
      const std::string reason = "the database refused its settlement: " + last_refusal_;
      log_failure(slot, check, reason);
      std::vector<SettleItem> failed{detail::failed_attempt(check, class_of(check.job).limits, judging(), reason,
                                                            items.front().run_micros)};
      if (settle_under_savepoint(savepoint, failed, checks, token, out)) return;
      spdlog::error("slot {} runner {}: the database refuses any settlement of check {} ({}); it stays pending, "
                    "left for the next sweep",
                    format_time(slot), options_.runner_id, check.id, one_line(last_refusal_));
      out.refused.push_back(check.id);
      unsettled_.ids.push_back(check.id);
      if (check.group_key) unsettled_.groups.push_back(*check.group_key);
      return;
    }
    const std::size_t half = items.size() / 2;
    for (const auto part : {items.first(half), items.subspan(half)}) {
      std::vector<SettleItem> attempt(part.begin(), part.end());
      if (!settle_under_savepoint(savepoint, attempt, checks, token, out)) {
        settle_halves(part, checks, token, slot, depth + 1, out);
      }
    }
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
      item = detail::failed_attempt(check, class_of(check.job).limits, judging(), error, item.run_micros);
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
  std::unique_ptr<BatchExecutor> executor_;
  std::map<std::string, JobClass> classes_;
  RunnerStore::Exclusions unsettled_;        // checks the database refused to settle, left out of this drain
  std::vector<std::string> capped_;    // classes this worker last saw at the abandoned-thread cap
  std::string last_refusal_;           // the database's reason for the last refused settlement
};

Worker::Worker(const RunnerOptions& options, const Registry& registry, const Clock& clock, const Settings& settings,
               std::unique_ptr<RunnerStore> store)
    : impl_(std::make_unique<Impl>(options, registry, clock, settings, std::move(store))) {}
Worker::~Worker() = default;

SlotReport Worker::drain(TimePoint slot) { return impl_->drain(slot); }

}  // namespace prescient
