#include "prescient/daemon.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "prescient/duration.hpp"
#include "prescient/errors.hpp"
#include "prescient/time_text.hpp"
#include "runner/maintenance.hpp"
#include "runner/reconnect_backoff.hpp"

namespace prescient {

using namespace prescient::runner;
namespace {

// How often the paused classes are looked at between boundaries while one is paused.
constexpr Micros kLookAgainEvery = std::chrono::seconds{1};

// A wait as the log says it: "0ms", "250ms", "2000ms".
std::string wait_text(Micros wait) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(wait).count()) + "ms";
}

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
               DaemonObserver* observer, std::shared_ptr<StoreOpener> stores)
    : options_(std::move(options)),
      registry_(registry),
      local_clock_(clock),
      clock_(clock),
      waiter_(waiter),
      observer_(observer),
      stores_(std::move(stores)) {
  options_.stop_requested = &waiter_.stop_flag();
}

bool Daemon::wait_until(TimePoint t) { return waiter_.wait_until(clock_.local_time_of(t)); }

void Daemon::measure_clock(SlotRunner& runner, bool starting) {
  if (!options_.clock_check.enabled) return;
  clock_.adopt(runner.server_clock_offset(local_clock_), options_.clock_check, starting);
  if (observer_) observer_->clock_offset(clock_.offset());
}

// One run of the daemon: the slot loop's state, and each of its steps.
class Daemon::Loop {
 public:
  explicit Loop(Daemon& daemon)
      : d_(daemon),
        maintainer_(d_.options_.runner_id, upkeep_services(), [this](const std::exception& e) { failed(e); }) {}

  DaemonStats run() {
    while (!d_.waiter_.stopped()) {
      if (!runner_ && !start()) continue;
      maintainer_.run_due(*runner_, std::nullopt, d_.clock_.now());
      follow_clock_back();
      if (!wait_for_boundary()) break;
      const std::optional<SlotReport> fired = fire();
      if (!fired) continue;
      maintainer_.run_due(*runner_, runner::FiredSlot{.slot = slot_, .claimed = fired->claimed}, d_.clock_.now());
      slot_ += runner_->settings().slot;
      tries_ = 0;
      note_lease_end();
    }
    spdlog::info("runner {}: stopped after {} slots ({} checks claimed)", d_.options_.runner_id, stats_.slots,
                 stats_.total.claimed);
    return stats_;
  }

 private:
  // The upkeep between slots, in the order it runs: the overdue sweep and the runner's record after each
  // slot, and the history's partitions before the first and then hourly.
  std::vector<std::unique_ptr<runner::MaintenanceService>> upkeep_services() {
    std::vector<std::unique_ptr<runner::MaintenanceService>> services;
    services.push_back(
        runner::overdue_sweep_service(d_.options_.runner_id, [this](const SlotReport& r) { count(r, false); }));
    services.push_back(runner::runner_seen_service());
    services.push_back(runner::history_partitions_service({}));
    return services;
  }

  // Opens the runner, catches up what was missed while no daemon ran, and sets the slot to fire from: the
  // current one. False when that failed: it was logged and waited for, and the next pass starts again.
  bool start() {
    try {
      runner_.emplace(d_.options_, d_.registry_, d_.clock_, d_.stores_);
      d_.measure_clock(*runner_, true);
      const TimePoint current = runner_->settings().grid().floor(d_.clock_.now());
      const SlotReport swept = runner_->sweep(current, SweepMode::run);
      if (swept.claimed > 0) {
        spdlog::info("runner {}: swept {} missed checks before {}", d_.options_.runner_id, swept.claimed,
                     format_time(current));
      }
      count(swept, false);
      slot_ = current;
      tries_ = 0;
      backoff_.succeeded();
      spdlog::info("runner {}: started, shard {}, slot {}", d_.options_.runner_id, d_.options_.shard.text(),
                   format_duration(runner_->settings().slot));
      return true;
    } catch (const InvalidInput&) {
      throw;  // a configuration error: retrying will not mend it
    } catch (const std::exception& e) {
      // Started again from the beginning: the slot to fire from is set only by a start that went through.
      runner_.reset();
      failed(e);
      const Micros wait = backoff_.after_failure();
      spdlog::warn("runner {}: starting failed, retrying in {}: {}", d_.options_.runner_id, wait_text(wait), e.what());
      d_.wait_until(d_.clock_.now() + wait);
      return false;
    }
  }

  // The clock went back by more than a slot (a correction, a VM restore). The slots from here to the old
  // position were fired by the earlier clock; fire them again as the clock reaches them (checks added
  // since would otherwise wait for the clock to catch up).
  void follow_clock_back() {
    const TimePoint current = runner_->settings().grid().floor(d_.clock_.now());
    if (slot_ <= current + runner_->settings().slot) return;
    spdlog::warn("runner {}: the clock went back from before {} to {}: firing again from slot {}",
                 d_.options_.runner_id, format_time(slot_), format_time(d_.clock_.now()), format_time(current));
    slot_ = current;
    tries_ = 0;
  }

  // Waits for slot_'s boundary. Meanwhile a check of a slot already fired that becomes claimable runs at
  // once, in its own slot, instead of at the next boundary's sweep (docs/runner.md, "Nothing waits a slot
  // for nothing"): while a class is paused, the paused classes are looked at every kLookAgainEvery, and a
  // resume runs what it freed; a live lease on a due check (its runner may have died) is waited for, and
  // what it held runs when it ends. With neither, this is one wait for the boundary, as before. False when
  // stopped; true early when the clock went back (the caller decides what that means).
  bool wait_for_boundary() {
    TimePoint seen = d_.clock_.now();
    while (true) {
      TimePoint until = slot_;
      if (seen < slot_ && !paused_.empty()) until = std::min(until, seen + kLookAgainEvery);
      if (seen < slot_ && lease_end_) until = std::min(until, std::max(*lease_end_, seen));
      if (!d_.wait_until(until)) return false;
      const TimePoint now = d_.clock_.now();
      if (now < seen || now >= slot_) return true;
      seen = now;
      look_again();
    }
  }

  // Runs the fired slots' checks that a resume or a lease's end made claimable, if either happened.
  void look_again() {
    try {
      std::vector<std::string> paused = runner_->paused_classes();
      const bool resumed = std::ranges::any_of(
          paused_, [&](const std::string& job) { return std::ranges::find(paused, job) == paused.end(); });
      paused_ = std::move(paused);
      const bool lease_ended = lease_end_ && d_.clock_.now() >= *lease_end_;
      if (!resumed && !lease_ended) return;
      const TimePoint fired = slot_ - runner_->settings().slot;
      SlotReport again = runner_->run_slot(fired);
      again.add(runner_->sweep(fired, SweepMode::run));
      count(again, false);
      spdlog::info("slot {} runner {}: {} checks claimable again ({}) claimed between boundaries",
                   format_time(fired), d_.options_.runner_id, again.claimed,
                   resumed ? "a class resumed" : "a lease ended");
    } catch (const InvalidInput&) {
      throw;
    } catch (const std::exception& e) {
      failed(e);
      runner_->drop_sessions();  // as after a failed slot: the others are as likely dead
      spdlog::warn("runner {}: looking again between boundaries failed (the next boundary's sweep catches up): {}",
                   d_.options_.runner_id, e.what());
    }
    note_lease_end();
  }

  // The next end of a live lease on a check of the slots fired so far, to look again then.
  void note_lease_end() {
    try {
      lease_end_ = runner_->next_lease_end(slot_);
    } catch (const std::exception& e) {
      lease_end_.reset();
      failed(e);
      spdlog::warn("runner {}: cannot look for leases that end (the next boundary's sweep catches up): {}",
                   d_.options_.runner_id, e.what());
    }
  }

  // Fires the slot at its boundary. Nothing when it did not: woken early, or failed (then tried again).
  std::optional<SlotReport> fire() {
    try {
      // Right before firing, so a clock that jumped since (a VM resumed) is caught.
      d_.measure_clock(*runner_, false);
      if (d_.clock_.now() < slot_) return std::nullopt;  // woken early (the clock moved back): never fire early
      // Before the claim: a class resumed after it is one whose checks the claim may have left.
      paused_ = runner_->paused_classes();
      const SlotReport report = runner_->run_slot(slot_);
      ++stats_.slots;
      count(report, true);
      if (report.claimed > 0) {
        spdlog::info("slot {} runner {}: claimed {}, done {}, rescheduled {}, retried {}, failed {}, guarded {} in {:.3f}s",
                     format_time(slot_), d_.options_.runner_id, report.claimed, report.done, report.rescheduled,
                     report.retried, report.failed, report.guarded, report.seconds);
      }
      if (tries_ > 0) {
        spdlog::warn("slot {} runner {}: completed at try {}", format_time(slot_), d_.options_.runner_id, tries_ + 1);
      }
      backoff_.succeeded();
      return report;
    } catch (const InvalidInput&) {
      throw;
    } catch (const std::exception& e) {
      retry_or_give_up(e);
      return std::nullopt;
    }
  }

  // A slot is tried again, with backoff, while its next boundary has not come; then it is given up: what
  // is left of it is overdue, and the sweep after the next slot takes it. So a slot that cannot be
  // completed never holds back the ones after it.
  void retry_or_give_up(const std::exception& e) {
    failed(e);
    // All of them: a runner thread's session the failed try did not reach is as likely dead (issue 57's failover:
    // the first try after the election failed on one, "cannot read the flow limits: server closed the
    // connection", and waited the longest wait again).
    runner_->drop_sessions();
    ++tries_;
    ++stats_.slot_retries;
    if (d_.observer_) d_.observer_->slot_retried(slot_);
    const Micros wait = backoff_.after_failure();
    spdlog::warn("slot {} runner {}: try {} failed, retrying in {}: {}", format_time(slot_), d_.options_.runner_id,
                 tries_, wait_text(wait), e.what());
    d_.wait_until(d_.clock_.now() + wait);
    const TimePoint now_slot = runner_->settings().grid().floor(d_.clock_.now());
    if (now_slot > slot_ && !d_.waiter_.stopped()) {
      spdlog::warn("slot {} runner {}: given up after {} tries; what is left of it is overdue and is caught up "
                   "after slot {}",
                   format_time(slot_), d_.options_.runner_id, tries_, format_time(now_slot));
      slot_ = now_slot;
      tries_ = 0;
    }
  }

  void count(const SlotReport& report, bool on_boundary) {
    if (d_.observer_) d_.observer_->fired(report, on_boundary);
    stats_.total.add(report);
    stats_.total.batch_seconds.clear();
  }

  void failed(const std::exception& e) {
    ++stats_.errors;
    if (d_.observer_) d_.observer_->failed(e);
  }

  Daemon& d_;
  DaemonStats stats_;
  ReconnectBackoff backoff_;  // the waits between tries after database failures
  std::optional<SlotRunner> runner_;
  TimePoint slot_{};  // the slot to fire next (set by a start that went through)
  std::vector<std::string> paused_;     // the classes paused when the last slot was claimed, or since
  std::optional<TimePoint> lease_end_;  // the next end of a live lease on a check of a fired slot
  int tries_ = 0;     // failed tries of slot_ so far
  runner::Maintainer maintainer_;
};

DaemonStats Daemon::run() { return Loop(*this).run(); }

}  // namespace prescient
