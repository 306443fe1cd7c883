#pragma once
// Daemon: sweeps missed slots once at start, then fires every slot at its boundary until stopped; after
// each slot it also runs whatever is still due before it (checks written off the grid by other tools,
// left behind, or whose written lease expired).
// Database failures are logged and retried on new sessions, the first time at once, then after 250 ms
// doubling to at most 1 s (runner/reconnect_backoff.hpp); the daemon itself does not exit for them. A slot
// whose firing fails is tried again until its next boundary comes, then given up: what is left of it is
// overdue and the sweep after the next slot takes it, so one slot never holds back the rest.
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "prescient/slot_runner.hpp"

namespace prescient {

// How the daemon waits for a boundary; stop() wakes it and makes every later wait return false.
class Waiter {
 public:
  virtual ~Waiter() = default;
  // Returns true when clock.now() >= t, or earlier when the clock went backwards (callers check the
  // clock again); false when stopped.
  virtual bool wait_until(TimePoint t) = 0;
  void stop();
  bool stopped() const { return stopped_.load(); }
  const std::atomic<bool>& stop_flag() const { return stopped_; }

 protected:
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<bool> stopped_{false};
};

// Sleeps on the real clock.
class SystemWaiter final : public Waiter {
 public:
  explicit SystemWaiter(const Clock& clock) : clock_(clock) {}
  bool wait_until(TimePoint t) override;

 private:
  const Clock& clock_;
};

// What the daemon reports as it goes, for metrics. Called on the daemon's thread.
class DaemonObserver {
 public:
  virtual ~DaemonObserver() = default;
  // After each slot fired at its boundary (on_boundary), and after each catch-up sweep.
  virtual void fired(const SlotReport& report, bool on_boundary) = 0;
  // A database failure the daemon backs off from and retries.
  virtual void failed(const std::exception& error) = 0;
  // A try of the slot at its boundary failed: the daemon tries it again, or gives it up to the sweep
  // once its next boundary has come.
  virtual void slot_retried(TimePoint /*slot*/) {}
  // Each measurement of how far the server's clock is ahead of this host's (options.clock_check).
  virtual void clock_offset(Micros /*server_minus_local*/) {}
};

struct DaemonStats {
  long slots = 0;  // slots fired (owned or not)
  long errors = 0;
  long slot_retries = 0;  // failed tries of a slot at its boundary
  SlotReport total;  // counts only: a daemon that runs for months keeps no per-batch detail
};

class Daemon {
 public:
  // REQUIRES: registry, clock, waiter and observer (when given) outlive the daemon; the waiter waits on
  // `clock`. options.stop_requested is set to the waiter's flag. With options.clock_check.enabled the
  // daemon fires on the database server's clock: `clock` plus the offset it measures at start (refusing
  // to start past clock_check.refuse_over) and again before every slot it fires.
  Daemon(RunnerOptions options, const Registry& registry, const Clock& clock, Waiter& waiter,
         DaemonObserver* observer = nullptr);
  // The same on stores `stores` opens (runner/upkeep_store.hpp) instead of PostgreSQL sessions to
  // options.database_url: the unit tests run the daemon's loop on in-memory stores.
  Daemon(RunnerOptions options, const Registry& registry, const Clock& clock, Waiter& waiter,
         DaemonObserver* observer, std::shared_ptr<runner::StoreOpener> stores);
  // Runs until the waiter is stopped; the batch in hand is settled before it returns.
  DaemonStats run();

 private:
  class Loop;  // one run's state and steps (runner/daemon.cpp)
  // Waits until `clock_` reads t (the waiter waits on the local clock).
  bool wait_until(TimePoint t);
  // Measures the clock's offset on the runner's control session and adopts it (ServerClock::adopt).
  void measure_clock(SlotRunner& runner, bool starting);

  RunnerOptions options_;
  const Registry& registry_;
  const Clock& local_clock_;
  ServerClock clock_;  // the local clock, or (clock_check.enabled) the server's as measured
  Waiter& waiter_;
  DaemonObserver* observer_;
  std::shared_ptr<runner::StoreOpener> stores_;  // the runner's stores: PostgreSQL's unless the caller gave others
};

}  // namespace prescient
