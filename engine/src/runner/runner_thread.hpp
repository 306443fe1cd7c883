#pragma once
// Internal: one of a slot runner's threads (--workers N of them; not a worker, which is a client of
// jobs/workers/). It claims batches of due checks through its store, runs their jobs on its executor
// (runner/batch_executor.hpp), passes what they answered through the job boundary (runner/settlements.hpp)
// and settles them in the same transaction, where the settle statement's prescient.judge
// (sql/functions/069_judge.sql) decides what becomes of each check; it isolates a check the database
// refuses (docs/decisions/0009-unit-of-failure-is-the-check.md).
#include <memory>

#include "prescient/clock.hpp"
#include "prescient/registry.hpp"
#include "prescient/settings.hpp"
#include "prescient/slot_runner.hpp"
#include "runner/batch_executor.hpp"
#include "runner/runner_store.hpp"

namespace prescient::runner {

class RunnerThread {
 public:
  // REQUIRES: options, registry, clock and settings outlive the runner thread. open_job_session opens the
  // session a job asks for (JobContext::db()).
  RunnerThread(const RunnerOptions& options, const Registry& registry, const Clock& clock, const Settings& settings,
               std::unique_ptr<RunnerStore> store, JobSessionOpener open_job_session);
  ~RunnerThread();
  RunnerThread(const RunnerThread&) = delete;
  RunnerThread& operator=(const RunnerThread&) = delete;

  // Claims and settles batches of checks due at `slot` until none is left (or a stop is requested).
  // A database failure of the session or server throws (the batch is rolled back, its rows free).
  SlotReport drain(TimePoint slot);
  // The same, one of several threads draining the slot: each claims after the place all have claimed to.
  SlotReport drain(TimePoint slot, ClaimMark& mark);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace prescient::runner
