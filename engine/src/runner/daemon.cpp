#include "prescient/daemon.hpp"

#include <spdlog/spdlog.h>

#include <optional>

#include "prescient/duration.hpp"
#include "prescient/errors.hpp"
#include "prescient/time_text.hpp"
#include "runner/upkeep_store.hpp"

namespace prescient {
namespace {

constexpr std::chrono::seconds kMaxBackoff{30};
// History partitions are created three months ahead; looking hourly is plenty, and after a failure
// (a lock not granted, a lost connection) a minute later.
constexpr std::chrono::hours kPartitionsEvery{1};
constexpr std::chrono::minutes kPartitionsRetry{1};

}  // namespace

void Waiter::stop() {
  {
    const std::lock_guard lock(mutex_);
    stopped_ = true;
  }
  wake_.notify_all();
}

bool SystemWaiter::wait_until(TimePoint t) {
  std::unique_lock lock(mutex_);
  TimePoint seen = clock_.now();
  while (!stopped_ && seen < t) {
    // The system clock can jump: sleep on the steady clock, at most a second at a time, and look again.
    wake_.wait_for(lock, std::min<Micros>(t - seen, std::chrono::seconds{1}));
    const TimePoint now = clock_.now();
    if (now < seen) break;  // it went backwards: the caller decides what that means for its schedule
    seen = now;
  }
  return !stopped_;
}

Daemon::Daemon(RunnerOptions options, const Registry& registry, const Clock& clock, Waiter& waiter,
               DaemonObserver* observer)
    : Daemon(std::move(options), registry, clock, waiter, observer, nullptr) {}

Daemon::Daemon(RunnerOptions options, const Registry& registry, const Clock& clock, Waiter& waiter,
               DaemonObserver* observer, std::shared_ptr<StoreOpener> stores)
    : options_(std::move(options)),
      registry_(registry),
      local_clock_(clock),
      clock_(clock),
      waiter_(waiter),
      observer_(observer),
      stores_(std::move(stores)) {
  options_.stop_requested = &waiter_.stop_flag();
  if (!stores_) stores_ = postgres_store_opener(options_.database_url, options_.statement_preparation);
}

bool Daemon::wait_until(TimePoint t) { return waiter_.wait_until(clock_.local_time_of(t)); }

void Daemon::measure_clock(SlotRunner& runner, bool starting) {
  if (!options_.clock_check.enabled) return;
  clock_.adopt(runner.server_clock_offset(local_clock_), options_.clock_check, starting);
  if (observer_) observer_->clock_offset(clock_.offset());
}

DaemonStats Daemon::run() {
  DaemonStats stats;
  std::chrono::seconds backoff{1};
  const auto count = [&](const SlotReport& report, bool on_boundary) {
    if (observer_) observer_->fired(report, on_boundary);
    stats.total.add(report);
    stats.total.batch_seconds.clear();
  };
  const auto failed = [&](const std::exception& e) {
    ++stats.errors;
    if (observer_) observer_->failed(e);
  };

  std::optional<SlotRunner> runner;
  std::optional<TimePoint> slot;
  int tries = 0;  // failed tries of *slot so far
  TimePoint partitions_due{};  // when to look at the history partitions again
  while (!waiter_.stopped()) {
    try {
      if (!runner) {
        runner.emplace(options_, registry_, clock_, stores_);
        measure_clock(*runner, true);
        const TimePoint current = runner->settings().grid().floor(clock_.now());
        // Catch up what was missed while no daemon ran, then fire from the current slot on.
        const SlotReport swept = runner->sweep(current, SweepMode::run);
        if (swept.claimed > 0) {
          spdlog::info("runner {}: swept {} missed checks before {}", options_.runner_id, swept.claimed,
                       format_time(current));
        }
        count(swept, false);
        slot = current;
        tries = 0;
        spdlog::info("runner {}: started, shard {}, slot {}", options_.runner_id, options_.shard.text(),
                     format_duration(runner->settings().slot));
      }
    } catch (const InvalidInput&) {
      throw;  // a configuration error: retrying will not mend it
    } catch (const std::exception& e) {
      // Started again from the beginning: the slot to fire from is set only by a start that went through.
      runner.reset();
      failed(e);
      spdlog::warn("runner {}: starting failed, retrying in {}: {}", options_.runner_id, format_duration(backoff),
                   e.what());
      wait_until(clock_.now() + backoff);
      backoff = std::min(backoff * 2, kMaxBackoff);
      continue;
    }
    if (clock_.now() >= partitions_due) {
      // Upkeep, never a reason to stop firing: settlements of a month without a partition go to the
      // default one meanwhile.
      try {
        runner->ensure_history_partitions();
        partitions_due = clock_.now() + kPartitionsEvery;
      } catch (const std::exception& e) {
        spdlog::warn("runner {}: could not create history partitions, trying again in {}: {}", options_.runner_id,
                     format_duration(kPartitionsRetry), e.what());
        partitions_due = clock_.now() + kPartitionsRetry;
      }
    }
    const SlotGrid grid = runner->settings().grid();
    const TimePoint current = grid.floor(clock_.now());
    if (*slot > current + runner->settings().slot) {
      // The clock went back by more than a slot (a correction, a VM restore). The slots from here
      // to the old position were fired by the earlier clock; fire them again as the clock reaches
      // them (checks added since would otherwise wait for the clock to catch up).
      spdlog::warn("runner {}: the clock went back from before {} to {}: firing again from slot {}",
                   options_.runner_id, format_time(*slot), format_time(clock_.now()), format_time(current));
      slot = current;
      tries = 0;
    }
    if (!wait_until(*slot)) break;
    long report_claimed = 0;
    try {
      // Right before firing, so a clock that jumped since (a VM resumed) is caught.
      measure_clock(*runner, false);
      if (clock_.now() < *slot) continue;  // woken early (the clock moved back): never fire before the slot
      const SlotReport report = runner->run_slot(*slot);
      report_claimed = report.claimed;
      ++stats.slots;
      count(report, true);
      if (report.claimed > 0) {
        spdlog::info("slot {} runner {}: claimed {}, done {}, rescheduled {}, retried {}, failed {}, guarded {} in {:.3f}s",
                     format_time(*slot), options_.runner_id, report.claimed, report.done, report.rescheduled,
                     report.retried, report.failed, report.guarded, report.seconds);
      }
      if (tries > 0) {
        spdlog::warn("slot {} runner {}: completed at try {}", format_time(*slot), options_.runner_id, tries + 1);
      }
      backoff = std::chrono::seconds{1};
    } catch (const InvalidInput&) {
      throw;
    } catch (const std::exception& e) {
      // A slot is tried again, with backoff, while its next boundary has not come; then it is given up:
      // what is left of it is overdue, and the sweep after the next slot takes it. So a slot that
      // cannot be completed never holds back the ones after it.
      failed(e);
      ++tries;
      ++stats.slot_retries;
      if (observer_) observer_->slot_retried(*slot);
      spdlog::warn("slot {} runner {}: try {} failed, retrying in {}: {}", format_time(*slot), options_.runner_id,
                   tries, format_duration(backoff), e.what());
      wait_until(clock_.now() + backoff);
      backoff = std::min(backoff * 2, kMaxBackoff);
      const TimePoint now_slot = grid.floor(clock_.now());
      if (now_slot > *slot && !waiter_.stopped()) {
        spdlog::warn("slot {} runner {}: given up after {} tries; what is left of it is overdue and is caught up "
                     "after slot {}",
                     format_time(*slot), options_.runner_id, tries, format_time(now_slot));
        slot = now_slot;
        tries = 0;
      }
      continue;
    }
    // Anything still due before this slot runs now: checks written off the grid by another tool,
    // checks left behind (a slot given up), and checks whose written lease expired (their runner died).
    // One index probe when there is none. A failure here is logged and tried again after the next slot:
    // it never delays the next boundary.
    try {
      const SlotReport overdue = runner->sweep(*slot, SweepMode::run);
      if (overdue.claimed > 0) {
        spdlog::info("runner {}: caught up {} overdue checks before {}", options_.runner_id, overdue.claimed,
                     format_time(*slot));
      }
      count(overdue, false);
    } catch (const InvalidInput&) {
      throw;
    } catch (const std::exception& e) {
      failed(e);
      spdlog::warn("runner {}: catching up before slot {} failed, trying again after the next slot: {}",
                   options_.runner_id, format_time(*slot), e.what());
    }
    // Seen firing, for the dashboard: upkeep too, never a reason to hold back the next slot.
    try {
      runner->record_seen(*slot, report_claimed);
    } catch (const std::exception& e) {
      spdlog::warn("runner {}: could not record slot {} as completed: {}", options_.runner_id, format_time(*slot),
                   e.what());
    }
    *slot += runner->settings().slot;
    tries = 0;
  }
  spdlog::info("runner {}: stopped after {} slots ({} checks claimed)", options_.runner_id, stats.slots,
               stats.total.claimed);
  return stats;
}

}  // namespace prescient
