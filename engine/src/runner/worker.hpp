#pragma once
// Internal: one worker of a slot runner. It claims batches of due checks through its store, runs their
// jobs on its executor (runner/batch_executor.hpp), passes what they answered through the job boundary
// (runner/settlements.hpp) and settles them in the same transaction, where the settle statement's
// prescient.judge (sql/functions/069_judge.sql) decides what becomes of each check; it isolates a check
// the database refuses (docs/decisions/0009-unit-of-failure-is-the-check.md).
#include <memory>

#include "prescient/clock.hpp"
#include "prescient/registry.hpp"
#include "prescient/settings.hpp"
#include "prescient/slot_runner.hpp"
#include "runner/batch_executor.hpp"
#include "runner/runner_store.hpp"

namespace prescient::runner {

class Worker {
 public:
  // REQUIRES: options, registry, clock and settings outlive the worker. open_job_session opens the session
  // a job asks for (JobContext::db()).
  Worker(const RunnerOptions& options, const Registry& registry, const Clock& clock, const Settings& settings,
         std::unique_ptr<RunnerStore> store, JobSessionOpener open_job_session);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Claims and settles batches of checks due at `slot` until none is left (or a stop is requested).
  // A database failure of the session or server throws (the batch is rolled back, its rows free).
  SlotReport drain(TimePoint slot);
  // The same, one of several workers draining the slot: each claims after the place all have claimed to.
  SlotReport drain(TimePoint slot, ClaimMark& mark);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace prescient::runner
