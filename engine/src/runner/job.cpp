#include "prescient/job.hpp"

namespace prescient {

std::vector<JobResult> JobExec::run_group(std::span<const Check> checks, JobContext& ctx) {
  std::vector<JobResult> results;
  results.reserve(checks.size());
  for (const Check& check : checks) results.push_back(run(check, ctx));
  return results;
}

}  // namespace prescient
