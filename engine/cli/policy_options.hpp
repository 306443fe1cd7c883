#pragma once
// The policy flags as people write them, read one way wherever they are taken: a runner's config-file
// defaults (--default-max-checks ...) and `prescient jobs set` (docs/guarantees.md, "Policies").
#include <chrono>
#include <optional>
#include <string_view>

#include "command.hpp"
#include "prescient/job.hpp"

namespace prescient::cli {

// "N" (1 to 1 000 000) or "unlimited" (read as 0: no limit, the horizon guards).
int parse_max_checks(std::string_view text);
// "N", 1 to 1 000.
int parse_max_attempts(std::string_view text);
// "D" (the first retry's wait, doubling) or "D..MAX" (and the longest wait), each 1s to 1d, MAX >= D.
struct Backoff {
  std::chrono::seconds first;
  std::optional<std::chrono::seconds> most;
};
Backoff parse_backoff(std::string_view text);
// A run's timeout: 1s to 1d.
std::chrono::seconds parse_run_timeout(std::string_view text);

// The runner's defaults for every class (--default-max-checks, --default-max-attempts, --default-backoff,
// --default-timeout), under each class's own policy and its row in the registry.
void add_default_policy_options(po::options_description& desc);
JobPolicy default_policy_of(const Invocation& in);

}  // namespace prescient::cli
