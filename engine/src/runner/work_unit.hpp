#pragma once
// Internal: what the runner hands its executor (units of a batch) and what comes back (a result per unit).
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "prescient/job.hpp"

namespace prescient::runner {

// Checks [first, first + count) of the batch, run by one call (one check, one group of one class, or the
// independent checks of one class that runs them together: JobPolicy::batch).
struct WorkUnit {
  std::shared_ptr<JobExec> exec;  // null when the class cannot run: `refusal` says why
  std::string job;
  std::string refusal;  // e.g. "unknown job class 'x' (is its plugin loaded?)"
  std::size_t first = 0;
  std::size_t count = 1;
  bool grouped = false;
  bool batched = false;  // run_batch: each check answered (or failed) on its own
  std::chrono::milliseconds timeout{30000};
};

// A batch's checks and units, shared with the executor's thread: an abandoned thread keeps them alive,
// and nothing is copied per batch.
using SharedChecks = std::shared_ptr<const std::vector<Check>>;
using SharedUnits = std::shared_ptr<const std::vector<WorkUnit>>;

struct UnitResult {
  bool ran = false;  // false: not reached (after a timeout, or past the batch's deadline); leave it unsettled
  bool failed = false;
  std::string error;  // storable already (prescient/text_rules.hpp): valid UTF-8, bounded
  std::vector<JobResult> results;     // one per check when !failed
  // A batched unit's per-check failures (one per check; nullopt: that check's result stands), storable.
  std::vector<std::optional<std::string>> check_failures;
  std::vector<BufferedWrite> writes;  // what the run asked to write with its settlement
  std::int64_t micros = 0;
};

}  // namespace prescient::runner
