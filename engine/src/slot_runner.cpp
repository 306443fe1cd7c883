#include "prescient/slot_runner.hpp"

#include <soci/soci.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "batch_executor.hpp"
#include "prescient/database.hpp"
#include "prescient/errors.hpp"
#include "prescient/guards.hpp"
#include "prescient/retention.hpp"
#include "prescient/store.hpp"
#include "prescient/time_text.hpp"

namespace prescient {
namespace {

using detail::BatchExecutor;
using detail::UnitResult;
using detail::WorkUnit;

// A written lease outlasts the job's timeout by this much, so a result in time is never discarded.
constexpr std::chrono::seconds kLeaseMargin{60};

// One worker: a session, an executor for the jobs, and the job class instances it made.
class Worker {
 public:
  Worker(const RunnerOptions& options, const Registry& registry, const Clock& clock, const Settings& settings)
      : options_(options), registry_(registry), clock_(clock), settings_(settings),
        db_(connect(options.database_url)), store_(*db_), executor_(std::make_unique<BatchExecutor>(options.database_url)) {}

  // Claims and settles batches at `slot` until none is left.
  SlotReport drain(TimePoint slot) {
    SlotReport report;
    report.slot = slot;
    while (!(options_.stop_requested && options_.stop_requested->load())) {
      const auto batch_start = std::chrono::steady_clock::now();
      store_.begin();
      try {
        std::vector<Check> checks = store_.claim_due(slot, clock_.now(), options_.batch_size);
        bool grouped = false;
        if (checks.empty()) {
          checks = store_.claim_due_groups(slot, options_.group_batch);
          grouped = true;
        }
        if (checks.empty()) {
          store_.rollback();
          return report;
        }
        if (!report.first_claim_at) report.first_claim_at = clock_.now();
        report.claimed += static_cast<long>(checks.size());
        // Long-running classes take the slow path: a written lease now, the run after the commit.
        std::vector<Check> fast, slow;
        for (Check& c : checks) (!grouped && class_of(c.job).long_running ? slow : fast).push_back(std::move(c));
        const auto batch = std::make_shared<const std::vector<Check>>(std::move(fast));
        std::vector<SettleItem> items = run(batch, grouped, slot);
        apply_writes(items, *batch);
        const Store::Settled settled = store_.settle(items, options_.runner_id, clock_.now());
        tally(items, settled, report);
        std::optional<std::int64_t> token;
        if (!slow.empty()) token = store_.lease(ids_of(slow), options_.runner_id, lease_end(slow));
        store_.commit();
        report.last_commit_at = clock_.now();
        report.batch_seconds.push_back(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - batch_start).count());
        spdlog::debug("slot {} runner {}: settled {} of {} claimed", format_time(slot), options_.runner_id,
                      settled.checks, items.size());
        if (token) {
          run_leased(slow, *token, slot, report);
          report.last_commit_at = clock_.now();
        }
      } catch (...) {
        try {
          store_.rollback();
        } catch (...) {
          // The connection is gone; the server rolls the transaction back and the rows are free.
        }
        throw;
      }
    }
    return report;
  }

 private:
  // A job class as this worker runs it: its instance, and its policy over the database's settings.
  struct JobClass {
    std::shared_ptr<JobExec> exec;  // null when the class is unknown (its checks fail)
    GuardLimits limits;
    std::chrono::seconds timeout;
    bool long_running = false;
  };

  const JobClass& class_of(const std::string& job) {
    const auto it = classes_.find(job);
    if (it != classes_.end()) return it->second;
    JobClass c;
    if (registry_.contains(job)) c.exec = registry_.create(job);
    const JobPolicy policy = c.exec ? c.exec->policy() : JobPolicy{};
    c.limits = {.max_checks = policy.max_checks.value_or(settings_.max_checks),
                .max_attempts = policy.max_attempts.value_or(settings_.max_attempts),
                .max_horizon = settings_.max_horizon};
    c.timeout = policy.timeout.value_or(settings_.job_timeout);
    c.long_running = policy.long_running;
    return classes_.emplace(job, std::move(c)).first->second;
  }

  static std::vector<std::int64_t> ids_of(const std::vector<Check>& checks) {
    std::vector<std::int64_t> ids;
    for (const Check& c : checks) ids.push_back(c.id);
    return ids;
  }

  // Long enough for the slowest class in the batch, with room for the settlement.
  TimePoint lease_end(const std::vector<Check>& checks) {
    std::chrono::seconds longest = settings_.job_timeout;
    for (const Check& c : checks) longest = std::max(longest, class_of(c.job).timeout);
    return clock_.now() + longest + kLeaseMargin;
  }

  // The slow path: run outside any transaction, then settle fenced by the lease token.
  void run_leased(const std::vector<Check>& checks, std::int64_t token, TimePoint slot, SlotReport& report) {
    std::vector<SettleItem> items = run(std::make_shared<const std::vector<Check>>(checks), false, slot);
    std::set<std::int64_t> unrun;
    for (const Check& c : checks) unrun.insert(c.id);
    for (const SettleItem& item : items) unrun.erase(item.id);
    store_.begin();
    // Only checks whose lease is still ours and live are settled (and their writes run); the rest
    // were rescued by another runner after the lease expired.
    std::vector<std::int64_t> ran;
    for (const SettleItem& item : items) ran.push_back(item.id);
    const std::vector<std::int64_t> locked = store_.lock_live_leases(ran, token, clock_.now());
    const std::set<std::int64_t> live(locked.begin(), locked.end());
    std::vector<SettleItem> settleable;
    for (const SettleItem& item : items) {
      if (live.contains(item.id)) settleable.push_back(item);
    }
    apply_writes(settleable, checks);
    const Store::Settled settled = store_.settle(settleable, options_.runner_id, clock_.now(), token);
    store_.release(std::vector<std::int64_t>(unrun.begin(), unrun.end()), token);
    store_.commit();
    tally(items, settled, report);
  }

  // Grouped checks arrive ordered by group: consecutive checks of one group and class form one unit.
  std::vector<WorkUnit> units_of(const std::vector<Check>& checks, bool grouped) {
    std::vector<WorkUnit> units;
    for (std::size_t i = 0; i < checks.size(); ++i) {
      const bool extends = grouped && !units.empty() && checks[i].group_key == checks[i - 1].group_key &&
                           checks[i].job == checks[i - 1].job;
      if (extends) {
        ++units.back().count;
        continue;
      }
      const JobClass& job = class_of(checks[i].job);
      units.push_back({.exec = job.exec, .job = checks[i].job, .first = i, .count = 1, .grouped = grouped,
                       .timeout = std::chrono::duration_cast<std::chrono::milliseconds>(job.timeout)});
    }
    return units;
  }

  std::vector<SettleItem> run(const detail::SharedChecks& batch, bool grouped, TimePoint slot) {
    const std::vector<Check>& checks = *batch;
    if (checks.empty()) return {};
    const auto shared_units = std::make_shared<const std::vector<WorkUnit>>(units_of(checks, grouped));
    const std::vector<WorkUnit>& units = *shared_units;
    const std::vector<UnitResult> results = executor_->run(batch, shared_units, slot, clock_, settings_.slot);
    if (executor_->timed_out()) {
      // The stuck thread keeps its job instances; this worker starts afresh.
      executor_ = std::make_unique<BatchExecutor>(options_.database_url);
      classes_.clear();
    }
    const SlotGrid grid = settings_.grid();
    // A late run (a sweep) never reschedules into the past: at the earliest, the next boundary from now.
    const TimePoint earliest = grid.floor(clock_.now()) + settings_.slot;
    std::vector<SettleItem> items;
    items.reserve(checks.size());
    for (std::size_t u = 0; u < units.size(); ++u) {
      const UnitResult& result = results[u];
      if (!result.ran) continue;  // not reached before a timeout: stays due, claimed again
      const GuardLimits& limits = class_of(units[u].job).limits;
      for (std::size_t k = 0; k < units[u].count; ++k) {
        const Check& check = checks[units[u].first + k];
        RunOutcome outcome{.failed = result.failed, .error = result.error};
        if (!result.failed) outcome.next = result.results[k].next;
        SettleItem item{.id = check.id,
                        .settlement = judge(outcome, check.slot, check.check_count, check.attempts, limits, grid),
                        .run_micros = result.micros / static_cast<std::int64_t>(units[u].count)};
        if (k == 0) item.writes = result.writes;  // a group's writes settle with its first check
        Settlement& s = item.settlement;
        if (s.kind != Settlement::Kind::finish && s.next_check_at < earliest) s.next_check_at = earliest;
        if (!result.failed) {
          const auto& events = result.results[k].events;
          for (std::size_t e = 0; e < events.size(); ++e) {
            std::string id = events[e].id;
            if (id.empty()) {
              id = std::to_string(check.id) + "-" + std::to_string(s.check_count);
              if (e > 0) id.append("-").append(std::to_string(e));
            }
            item.events.push_back({.id = std::move(id), .type = events[e].type,
                                   .source = events[e].source.empty() ? std::to_string(check.id) : events[e].source,
                                   .occurred_at = events[e].occurred_at.value_or(check.slot),
                                   .payload = events[e].payload});
          }
        }
        items.push_back(std::move(item));
      }
      if (result.failed) {
        spdlog::warn("slot {} runner {}: job {} failed for check {}: {}", format_time(slot), options_.runner_id,
                     units[u].job, checks[units[u].first].id, result.error);
      }
    }
    return items;
  }

  // Runs the items' buffered writes; a check whose writes fail is judged as a failed run instead
  // (retried, its error kept) and its events are dropped with its writes.
  void apply_writes(std::vector<SettleItem>& items, const std::vector<Check>& checks) {
    const auto failures = store_.apply_writes(items);
    for (const auto& [index, error] : failures) {
      SettleItem& item = items[index];
      const auto check = std::find_if(checks.begin(), checks.end(), [&](const Check& c) { return c.id == item.id; });
      item.settlement = judge(RunOutcome{.failed = true, .error = error}, check->slot, check->check_count, check->attempts,
                              class_of(check->job).limits, settings_.grid());
      item.events.clear();
      spdlog::warn("runner {}: the writes of check {} failed: {}", options_.runner_id, item.id, error);
    }
  }

  // Outcomes count once their settlement applied; a fenced settlement that found its lease gone
  // (expired, the checks rescued by another runner) counts as discarded.
  void tally(const std::vector<SettleItem>& items, const Store::Settled& settled, SlotReport& report) const {
    report.events += settled.events;
    if (settled.checks < static_cast<std::int64_t>(items.size())) {
      report.discarded += static_cast<long>(items.size()) - settled.checks;
      spdlog::warn("runner {}: discarded {} results whose lease had expired", options_.runner_id,
                   static_cast<std::int64_t>(items.size()) - settled.checks);
      return;
    }
    for (const SettleItem& item : items) {
      const Settlement& s = item.settlement;
      switch (s.kind) {
        case Settlement::Kind::reschedule: ++report.rescheduled; break;
        case Settlement::Kind::retry: ++report.retried; break;
        case Settlement::Kind::finish:
          if (s.outcome == "done") ++report.done;
          else if (s.outcome == "failed") ++report.failed;
          else ++report.guarded;
          break;
      }
    }
  }

  const RunnerOptions& options_;
  const Registry& registry_;
  const Clock& clock_;
  const Settings& settings_;
  std::unique_ptr<soci::session> db_;
  Store store_;
  std::unique_ptr<BatchExecutor> executor_;
  std::map<std::string, JobClass> classes_;
};

}  // namespace

struct SlotRunner::Sessions {
  std::vector<std::unique_ptr<Worker>> workers;
  std::unique_ptr<soci::session> control;
};

template <class Fn>
auto SlotRunner::with_control(Fn fn) {
  if (!sessions_->control) sessions_->control = connect(options_.database_url);
  try {
    Store store(*sessions_->control);
    return fn(store);
  } catch (...) {
    sessions_->control.reset();
    throw;
  }
}

void SlotReport::add(const SlotReport& o) {
  claimed += o.claimed;
  done += o.done;
  rescheduled += o.rescheduled;
  retried += o.retried;
  failed += o.failed;
  guarded += o.guarded;
  events += o.events;
  shifted += o.shifted;
  discarded += o.discarded;
  if (o.first_claim_at && (!first_claim_at || *o.first_claim_at < *first_claim_at)) first_claim_at = o.first_claim_at;
  if (o.last_commit_at && (!last_commit_at || *o.last_commit_at > *last_commit_at)) last_commit_at = o.last_commit_at;
  batch_seconds.insert(batch_seconds.end(), o.batch_seconds.begin(), o.batch_seconds.end());
}

SweepMode parse_sweep_mode(std::string_view text) {
  if (text == "run") return SweepMode::run;
  if (text == "shift") return SweepMode::shift;
  throw InvalidInput("invalid sweep mode '" + std::string(text) + "': use run or shift");
}

SlotRunner::SlotRunner(RunnerOptions options, const Registry& registry, const Clock& clock)
    : options_(std::move(options)), registry_(registry), clock_(clock), sessions_(std::make_unique<Sessions>()) {
  if (options_.workers < 1 || options_.workers > 64) {
    throw InvalidInput("invalid --workers " + std::to_string(options_.workers) + ": use 1 to 64");
  }
  if (options_.batch_size < 1) throw InvalidInput("invalid batch size " + std::to_string(options_.batch_size));
  sessions_->workers.resize(options_.workers);
  settings_ = with_control([](Store& store) { return store.settings(); });
}

SlotRunner::~SlotRunner() = default;

void SlotRunner::require_firable(TimePoint slot, const char* what) const {
  const SlotGrid grid = settings_.grid();
  if (!grid.on_grid(slot)) {
    throw InvalidInput(std::string(what) + " " + format_time(slot) + " is not on the " +
                       std::to_string(settings_.slot.count()) + "s slot grid (e.g. " +
                       format_time(grid.floor(slot)) + ")");
  }
  if (slot > grid.floor(clock_.now())) {
    throw InvalidInput(std::string(what) + " " + format_time(slot) + " is later than the current slot " +
                       format_time(grid.floor(clock_.now())) + ": nothing fires early");
  }
}

SlotReport SlotRunner::drain(TimePoint slot) {
  const auto begin = std::chrono::steady_clock::now();
  std::vector<SlotReport> reports(options_.workers);
  std::vector<std::exception_ptr> errors(options_.workers);
  std::vector<std::thread> threads;
  for (int w = 0; w < options_.workers; ++w) {
    threads.emplace_back([&, w] {
      std::unique_ptr<Worker>& worker = sessions_->workers[w];
      try {
        if (!worker) worker = std::make_unique<Worker>(options_, registry_, clock_, settings_);
        reports[w] = worker->drain(slot);
      } catch (...) {
        worker.reset();  // its session may be broken: the next slot reconnects
        errors[w] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  SlotReport total;
  total.slot = slot;
  for (const auto& r : reports) total.add(r);
  total.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  return total;
}

SlotReport SlotRunner::run_slot(TimePoint slot) {
  require_firable(slot, "slot");
  if (!options_.shard.owns(settings_.grid(), slot)) {
    SlotReport skipped;
    skipped.slot = slot;
    skipped.owned = false;
    return skipped;
  }
  return drain(slot);
}

SlotReport SlotRunner::sweep(TimePoint until, SweepMode mode, const std::function<void(const SlotReport&)>& progress) {
  require_firable(until, "--until");
  const auto begin = std::chrono::steady_clock::now();
  const SlotGrid grid = settings_.grid();
  SlotReport total;
  total.slot = until;
  TimePoint from = from_unix_micros(-62135596800LL * 1000000);  // 0001-01-01, within PostgreSQL's range
  while (const auto slot = with_control([&](Store& store) { return store.next_overdue_slot(from, until); })) {
    from = *slot + std::chrono::microseconds{1};
    if (!options_.shard.owns(grid, grid.floor(*slot))) continue;
    SlotReport part;
    part.slot = *slot;
    if (mode == SweepMode::run) {
      part = drain(*slot);
    } else {
      const TimePoint to = grid.floor(clock_.now()) + settings_.slot;
      while (const std::int64_t moved =
                 with_control([&](Store& store) { return store.shift_slot(*slot, to, options_.batch_size); })) {
        part.shifted += moved;
      }
    }
    total.add(part);
    if (progress) progress(part);
  }
  total.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  return total;
}

int SlotRunner::ensure_history_partitions() {
  return with_control([&](Store&) { return prescient::ensure_history_partitions(*sessions_->control, clock_.now()); });
}

}  // namespace prescient
