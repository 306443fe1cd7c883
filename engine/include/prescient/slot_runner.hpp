#pragma once
// SlotRunner: fires one slot (claim -> run -> settle, where prescient.judge decides what becomes of each
// check) with a pool of runner threads, each with its own database session; and catches up missed slots (sweep).
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "prescient/job.hpp"
#include "prescient/server_clock.hpp"
#include "prescient/clock.hpp"
#include "prescient/registry.hpp"
#include "prescient/settings.hpp"
#include "prescient/shard.hpp"

namespace prescient {

// Whether the runner's hot statements (claim, settle) are prepared on the server once per session.
// automatic: prepared on a direct connection, unnamed through a connection pooler (through_pooler()),
// since a pooler in transaction mode loses them between transactions; on: prepared always (a pooler in
// session mode); off: unnamed always.
enum class StatementPreparation { automatic, on, off };
StatementPreparation parse_statement_preparation(std::string_view text);  // throws InvalidInput

// The most runner threads one runner takes; each holds up to two sessions (docs/operations.md). The flag
// --workers and RunnerOptions::workers keep their names for the scripts, configs and programs that set them.
constexpr int kMaxWorkers = 64;

struct RunnerOptions {
  std::string database_url;
  std::string runner_id;  // recorded as finished_by in history
  int workers = 1;  // runner threads: 1 to kMaxWorkers
  int batch_size = 1000;  // ungrouped checks per transaction
  int group_batch = 50;   // whole groups per transaction
  // No job of a batch starts after this much time from its claim: the checks not reached are released
  // unrun (due again at once), so the row locks a batch holds while its jobs run are bounded by this
  // plus the timeout of the job running at the deadline (and its 2 s grace).
  std::chrono::milliseconds batch_deadline{10000};
  // A job that never returns keeps its thread (abandoned: threads cannot be killed). With this many such
  // threads of one class still running in the process, the runner takes none of the class's checks
  // until one returns; they stay due for another runner, or for this one later.
  int max_abandoned_per_class = 8;
  // The config file's defaults for every class's policy (--max-checks, --max-attempts, --backoff,
  // --job-timeout): under a class's coded policy and the registry's row, over the database's settings.
  JobPolicy default_policy;
  Shard shard;
  StatementPreparation statement_preparation = StatementPreparation::automatic;
  // The daemon's watch on its clock against the server's (prescient/server_clock.hpp).
  ClockCheck clock_check;
  // When set and true, the runner threads claim no further batch (the batch in hand is still settled).
  const std::atomic<bool>* stop_requested = nullptr;
};

struct SlotReport {
  TimePoint slot;
  bool owned = true;  // false: another shard's slot, nothing done
  long claimed = 0;
  long done = 0;
  long rescheduled = 0;
  long retried = 0;
  long failed = 0;
  long guarded = 0;  // guard_max_checks, guard_past, guard_horizon
  long events = 0;
  long shifted = 0;    // sweep --mode shift
  long discarded = 0;  // slow-path results that came back after their lease expired
  long deferred = 0;   // checks flow limits moved to a later time (docs/flow-control.md)
  double seconds = 0;
  // On the runner's clock: when the first batch was claimed and the last one committed (none when
  // nothing was claimed), and how long each batch took from claim to commit.
  std::optional<TimePoint> first_claim_at;
  std::optional<TimePoint> last_commit_at;
  std::vector<double> batch_seconds;
  void add(const SlotReport& other);
};

// Jobs abandoned in their thread (they did not return within their timeout) and still running, in this
// process. A process that exits while some run must not destroy what they may touch: the CLI leaves with
// _Exit then, without running static destructors.
int abandoned_jobs_running();

enum class SweepMode { run, shift };
SweepMode parse_sweep_mode(std::string_view text);  // throws InvalidInput

namespace runner {
class StoreOpener;  // internal (runner/upkeep_store.hpp): where the runner's stores come from
}

class SlotRunner {
 public:
  // REQUIRES: registry and clock outlive the runner. Connects once to read the settings; the runner threads'
  // sessions are opened on the first slot and kept for the next ones (a daemon fires many).
  SlotRunner(RunnerOptions options, const Registry& registry, const Clock& clock);
  // The same on stores `stores` opens instead of PostgreSQL sessions to options.database_url (the unit
  // tests' in-memory stores).
  SlotRunner(RunnerOptions options, const Registry& registry, const Clock& clock, std::shared_ptr<runner::StoreOpener> stores);
  ~SlotRunner();
  SlotRunner(const SlotRunner&) = delete;
  SlotRunner& operator=(const SlotRunner&) = delete;

  const Settings& settings() const { return settings_; }

  // Fires exactly the checks with next_check_at = slot, if the shard owns it. Throws InvalidInput for a
  // slot off the grid or later than the current slot (nothing ever fires early).
  SlotReport run_slot(TimePoint slot);

  // Catches up the checks due before `until` (on the grid, not later than the current slot), oldest
  // slot first, each slot owned by the shard: run (as run_slot) or shift to the next boundary from now.
  // `progress` is called after each slot.
  SlotReport sweep(TimePoint until, SweepMode mode, const std::function<void(const SlotReport&)>& progress = {});

  // Creates the monthly history partitions the next three months need (prescient/retention.hpp), on the
  // upkeep session at the runner's clock; returns how many it created. Settlements never wait for it:
  // a month without a partition goes to the default one until then.
  int ensure_history_partitions();
  // Records on the upkeep session that this runner completed `slot`, claiming `claimed` checks in it
  // (prescient/runners_seen.hpp: the dashboard's runners).
  void record_seen(TimePoint slot, long claimed);
  // How far the database server's clock is ahead of `local` (server_clock_offset), on the upkeep session.
  Micros server_clock_offset(const Clock& local);
  // The paused classes, on the upkeep session (a resume makes their due checks claimable at once).
  std::vector<std::string> paused_classes();
  // When a check due before `before` that a live lease holds becomes claimable (the earliest lease end
  // after now), on the upkeep session; none when no lease is held.
  std::optional<TimePoint> next_lease_end(TimePoint before);
  // Closes every session the runner holds; the next call opens new ones. After a database failure: the
  // sessions a failed try did not reach are as likely dead (a failover ends them all), and one found dead
  // only at the next try would fail it too.
  void drop_sessions();

 private:
  void require_firable(TimePoint slot, const char* what) const;
  SlotReport drain(TimePoint slot);
  // Runs fn on the upkeep store (settings, sweep look-ups, upkeep); drops the store if fn throws, so the
  // next call reconnects.
  template <class Fn>
  auto with_upkeep(Fn fn);

  RunnerOptions options_;
  const Registry& registry_;
  const Clock& clock_;
  Settings settings_;
  std::shared_ptr<runner::StoreOpener> stores_;
  // The runner threads (each a store and an executor thread) and the upkeep store, reused across slots.
  // Declared last: destroyed first, while the options and settings the runner threads refer to still live.
  struct Sessions;
  std::unique_ptr<Sessions> sessions_;
};

}  // namespace prescient
