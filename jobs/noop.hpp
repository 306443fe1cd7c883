#pragma once
// noop: finishes every check at once (history `done`). For tests and benchmarks: the pure cost of
// claiming and settling.
#include "prescient/job.hpp"

namespace prescient::jobs {

class NoopJob final : public JobExec {
 public:
  JobResult run(const Check&, JobContext&) override { return {}; }
};

}  // namespace prescient::jobs
