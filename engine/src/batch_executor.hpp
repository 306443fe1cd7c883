#pragma once
// Internal: runs one batch's jobs on a thread of its own so the runner can enforce each class's
// timeout. A job that overruns is judged a failure, the rest of the batch is left unrun (it stays
// due and is claimed again), and the thread stuck in the job is abandoned: a thread cannot be killed
// safely, so it is detached and exits whenever the job returns.
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "prescient/clock.hpp"
#include "prescient/job.hpp"

namespace prescient::detail {

// The executor gives up on a job this long after its timeout: jobs that enforce the timeout themselves
// (a statement_timeout, killing a child process) get to do so and report precisely; the executor is
// the backstop for jobs that do not return at all.
inline constexpr std::chrono::milliseconds kTimeoutGrace{2000};

// Checks [first, first + count) of the batch, run by one call (one check, or one group of one class).
struct WorkUnit {
  std::shared_ptr<JobExec> exec;  // null when the class is unknown
  std::string job;
  std::size_t first = 0;
  std::size_t count = 1;
  bool grouped = false;
  std::chrono::milliseconds timeout{30000};
};

// A batch's checks and units, shared with the executor's thread: an abandoned thread keeps them alive,
// and nothing is copied per batch.
using SharedChecks = std::shared_ptr<const std::vector<Check>>;
using SharedUnits = std::shared_ptr<const std::vector<WorkUnit>>;

struct UnitResult {
  bool ran = false;  // false: not reached (after a timeout); leave its checks unsettled
  bool failed = false;
  std::string error;
  std::vector<JobResult> results;  // one per check when !failed
  std::vector<BufferedWrite> writes;  // what the run asked to write with its settlement
  std::int64_t micros = 0;
};

class BatchExecutor {
 public:
  // database_url: for JobContext::db(), opened on first use.
  explicit BatchExecutor(std::string database_url);
  ~BatchExecutor();
  BatchExecutor(const BatchExecutor&) = delete;
  BatchExecutor& operator=(const BatchExecutor&) = delete;

  // Runs the units in order. Returns one result per unit. After a timeout this executor is spent:
  // timed_out() is true and the caller must use a new one.
  std::vector<UnitResult> run(SharedChecks checks, SharedUnits units, TimePoint slot, const Clock& clock,
                              std::chrono::seconds resolution);
  bool timed_out() const { return timed_out_; }

 private:
  struct State;
  void loop(std::shared_ptr<State> state);

  std::shared_ptr<State> state_;
  std::thread thread_;
  bool timed_out_ = false;
};

}  // namespace prescient::detail
