#pragma once
// The policy flags as people write them, read one way wherever they are taken: a runner's config-file
// defaults (--default-max-checks ...), `prescient jobs set` and a check's own at `schedule`
// (docs/guarantees.md, "Policies").
#include <chrono>
#include <optional>
#include <string_view>

#include "command.hpp"
#include "prescient/job.hpp"

namespace prescient::cli {

// The syntax alone, where SQL judges the values (a class's policy, a check's own): "N" or "unlimited" (0),
// a whole number, "D" or "D..MAX" (durations, a sign allowed so that SQL refuses it in its words).
int max_checks_syntax(std::string_view text);
int whole_number_syntax(std::string_view text, const char* what);
struct Backoff {
  std::chrono::seconds first;
  std::optional<std::chrono::seconds> most;
};
Backoff backoff_syntax(std::string_view text);

// A check's own policy from `schedule`'s flags (--max-checks, --max-attempts, --backoff), SQL's to judge.
void add_check_policy_options(po::options_description& desc);
JobPolicy check_policy_of(const Invocation& in);

// The runner's defaults, which no SQL judges, with their ranges:
// "N" (1 to 1 000 000) or "unlimited" (read as 0: no limit, the horizon guards).
int parse_max_checks(std::string_view text);
// "N", 1 to 1 000.
int parse_max_attempts(std::string_view text);
// "D" (the first retry's wait, doubling) or "D..MAX" (and the longest wait), each 1s to 1d, MAX >= D.
Backoff parse_backoff(std::string_view text);
// A run's timeout: 1s to 1d.
std::chrono::seconds parse_run_timeout(std::string_view text);

// The runner's defaults for every class (--default-max-checks, --default-max-attempts, --default-backoff,
// --default-timeout), under each class's coded policy and its row in the registry.
void add_default_policy_options(po::options_description& desc);
JobPolicy default_policy_of(const Invocation& in);

}  // namespace prescient::cli
