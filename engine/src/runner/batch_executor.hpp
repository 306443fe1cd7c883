#pragma once
// Internal: runs one batch's jobs on a thread of its own so the runner can enforce each class's
// timeout. A job that overruns is judged a failure, the rest of the batch is left unrun (it stays
// due and is claimed again), and the thread stuck in the job is abandoned: a thread cannot be killed
// safely, so it is detached and exits whenever the job returns (counted in abandoned_jobs.hpp meanwhile).
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "prescient/clock.hpp"
#include "runner/work_unit.hpp"

namespace soci {
class session;
}

namespace prescient::runner {

// Opens the session JobContext::db() gives the jobs: StoreOpener::open_job_session, so that the runner
// names no database.
using JobSessionOpener = std::function<std::unique_ptr<soci::session>()>;

// The executor gives up on a job this long after its timeout: jobs that enforce the timeout themselves
// (a statement_timeout, killing a child process) get to do so and report precisely; the executor is
// the backstop for jobs that do not return at all.
inline constexpr std::chrono::milliseconds kTimeoutGrace{2000};

class BatchExecutor {
 public:
  // open_job_session: for JobContext::db(), called on its first use.
  explicit BatchExecutor(JobSessionOpener open_job_session);
  ~BatchExecutor();
  BatchExecutor(const BatchExecutor&) = delete;
  BatchExecutor& operator=(const BatchExecutor&) = delete;

  // Runs the units in order, starting none but the first after `deadline` (those are not ran). Returns
  // one result per unit. After a timeout this executor is spent: timed_out() is true, the caller must
  // use a new one, and the abandoned thread no longer reads `clock` (it may be destroyed).
  std::vector<UnitResult> run(SharedChecks checks, SharedUnits units, TimePoint slot, const Clock& clock,
                              std::chrono::seconds resolution, std::chrono::seconds max_horizon,
                              std::chrono::steady_clock::time_point deadline);
  bool timed_out() const { return timed_out_; }

  struct State;  // shared with the executor's thread (and the job's context)

 private:
  void loop(std::shared_ptr<State> state);

  std::shared_ptr<State> state_;
  std::thread thread_;
  bool timed_out_ = false;
};

}  // namespace prescient::runner
