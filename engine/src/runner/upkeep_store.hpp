#pragma once
// Internal: what a slot runner asks of the database besides claiming and settling (RunnerStore): the
// settings, the sweep's look-ups and moves, and the upkeep between slots. And the one place a slot runner
// gets its stores and its jobs' session from, so that runner/ names no database: PostgreSQL's opener is
// db/'s (db/postgres_store_opener.cpp, with the SlotRunner and Daemon constructors that use it); the unit
// tests hand a slot runner in-memory stores instead (tests/unit/fake_stores.hpp).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "prescient/clock.hpp"
#include "prescient/settings.hpp"
#include "prescient/time.hpp"
#include "runner/runner_store.hpp"

namespace soci {
class session;
}

namespace prescient::runner {

class UpkeepStore {
 public:
  virtual ~UpkeepStore() = default;

  virtual Settings read_settings() = 0;
  // The earliest slot before `until` holding a pending check, at or after `from`.
  virtual std::optional<TimePoint> next_overdue_slot(TimePoint from, TimePoint until) = 0;
  // Moves up to `limit` checks due at `slot` to `to` without running them. Returns how many moved.
  virtual std::int64_t shift_slot(TimePoint slot, TimePoint to, int limit) = 0;
  // The monthly history partitions the next three months need; returns how many it created.
  virtual int ensure_history_partitions(TimePoint now) = 0;
  // That `runner_id` (firing `shard`) completed `slot`, claiming `claimed` checks in it.
  virtual void record_runner_seen(const std::string& runner_id, const std::string& shard, TimePoint slot,
                                  long claimed, TimePoint now) = 0;
  // How far the database server's clock is ahead of `local`.
  virtual Micros server_clock_offset(const Clock& local) = 0;
  // The paused classes (prescient.paused_job), by name.
  virtual std::vector<std::string> paused_classes() = 0;
  // The earliest end after `now` of a live lease on a runner's check due before `before`: when a check a
  // claim could not take becomes claimable, its holder gone. None when no such lease is held.
  virtual std::optional<TimePoint> next_lease_end(TimePoint now, TimePoint before) = 0;
};

// Opens a slot runner's stores, each on a connection of its own: one per runner thread, and one for the upkeep.
// A store whose call threw is dropped by the slot runner and opened anew at its next use.
class StoreOpener {
 public:
  virtual ~StoreOpener() = default;
  virtual std::unique_ptr<RunnerStore> open_thread_store() = 0;
  virtual std::unique_ptr<UpkeepStore> open_upkeep_store() = 0;
  // The session a runner thread's jobs are given (JobContext::db()), apart from the thread's own. Called on
  // the runner thread's executor thread, which may outlive the slot runner (an abandoned job).
  virtual std::unique_ptr<soci::session> open_job_session() = 0;
};

}  // namespace prescient::runner
