#pragma once
// http: answers a check by calling the application's own endpoint (docs/http.md). The payload names a
// configured target and a path below its URL: {"target": "shop", "path": "/checks/order-unshipped"}; the
// check goes as a signed JSON POST, and the answer decides (http_exchange.hpp). A check naming an unknown
// target, or a path that could leave the target's URL, fails with that reason and no request is made.
// Long-running and batched: a slow-path batch's requests are handed to the process's HTTP engine at once
// (http_engine.hpp: one connection cache, each target's max_concurrent held across every worker).
#include <cstdint>
#include <memory>

#include "http_engine.hpp"
#include "http_targets.hpp"
#include "prescient/job.hpp"

namespace prescient::jobs {

class HttpJob final : public JobExec {
 public:
  // targets: shared by every worker's instance; none configured: every check fails saying so.
  explicit HttpJob(std::shared_ptr<const HttpTargets> targets);
  JobPolicy policy() const override;
  JobResult run(const Check& check, JobContext& ctx) override;
  std::vector<BatchAnswer> run_batch(std::span<const Check> checks, JobContext& ctx) override;

 private:
  HttpCall call_for(const Check& check, std::int64_t timestamp) const;

  std::shared_ptr<const HttpTargets> targets_;
};

}  // namespace prescient::jobs
