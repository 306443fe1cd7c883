#pragma once
// http: answers a check by calling the application's own endpoint (docs/http.md). The payload names a
// configured target and a path below its URL: {"target": "shop", "path": "/checks/order-unshipped"}; the
// check goes as a signed JSON POST, and the answer decides (http_exchange.hpp). A check naming an unknown
// target, or a path that could leave the target's URL, fails with that reason and no request is made.
// Long-running and batched: a slow-path batch's requests run at once (libcurl's multi interface, its
// connections kept and reused), each target's max_concurrent held across all the process's workers.
#include <memory>

#include "http_targets.hpp"
#include "prescient/job.hpp"

namespace prescient {

class HttpJob final : public JobExec {
 public:
  // targets: shared by every worker's instance; none configured: every check fails saying so.
  explicit HttpJob(std::shared_ptr<const HttpTargets> targets);
  ~HttpJob() override;
  JobPolicy policy() const override;
  JobResult run(const Check& check, JobContext& ctx) override;
  std::vector<BatchAnswer> run_batch(std::span<const Check> checks, JobContext& ctx) override;

 private:
  struct Transfers;
  std::shared_ptr<const HttpTargets> targets_;
  std::unique_ptr<Transfers> transfers_;
};

}  // namespace prescient
