#include "prescient/job.hpp"

namespace prescient {

std::vector<JobResult> JobExec::run_group(std::span<const Check> checks, JobContext& ctx) {
  std::vector<JobResult> results;
  results.reserve(checks.size());
  for (const Check& check : checks) results.push_back(run(check, ctx));
  return results;
}

std::vector<BatchAnswer> JobExec::run_batch(std::span<const Check> checks, JobContext& ctx) {
  std::vector<BatchAnswer> answers(checks.size());
  for (std::size_t i = 0; i < checks.size(); ++i) {
    try {
      answers[i].result = run(checks[i], ctx);
    } catch (const std::exception& e) {
      answers[i].failure = e.what();
    } catch (...) {
      answers[i].failure = "the job threw a non-standard exception";
    }
  }
  return answers;
}

}  // namespace prescient
