#include "policy_options.hpp"

#include <charconv>
#include <optional>

#include "prescient/duration.hpp"
#include "prescient/errors.hpp"

namespace prescient::cli {
namespace {

// The whole number `text` is, or nothing.
std::optional<int> whole_number_of(std::string_view text) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// A whole number within [low, high]; anything else is refused naming the range.
int whole_number_within(std::string_view text, int low, int high, const char* what) {
  const std::optional<int> value = whole_number_of(text);
  if (!value || *value < low || *value > high) {
    throw InvalidInput("invalid " + std::string(what) + " '" + std::string(text) + "': use " + std::to_string(low) +
                       " to " + std::to_string(high));
  }
  return *value;
}

std::chrono::seconds wait_of(std::string_view text, const char* what) {
  const std::chrono::seconds wait = parse_duration(text);
  if (wait < std::chrono::seconds{1} || wait > std::chrono::hours{24}) {
    throw InvalidInput("invalid " + std::string(what) + " '" + std::string(text) + "': use 1s to 1d");
  }
  return wait;
}

// "D" or "D..MAX", each part read by `read(part, its name)`.
template <class Read>
Backoff backoff_of(std::string_view text, Read read) {
  const std::size_t dots = text.find("..");
  Backoff backoff{.first = read(text.substr(0, dots), "backoff")};
  if (dots != std::string_view::npos) backoff.most = read(text.substr(dots + 2), "backoff ceiling");
  return backoff;
}

}  // namespace

int whole_number_syntax(std::string_view text, const char* what) {
  const std::optional<int> value = whole_number_of(text);
  if (!value) throw InvalidInput(std::string(what) + " '" + std::string(text) + "' is not a whole number");
  return *value;
}

int max_checks_syntax(std::string_view text) {
  return text == "unlimited" ? 0 : whole_number_syntax(text, "max_checks (a number or unlimited)");
}

Backoff backoff_syntax(std::string_view text) {
  return backoff_of(text, [](std::string_view part, const char*) { return parse_signed_duration(part); });
}

void add_check_policy_options(po::options_description& desc) {
  desc.add_options()
      ("max-checks", po::value<std::string>()->value_name("N|unlimited"),
       "this check's own max_checks, over its class's policy (unlimited: no limit, the horizon guards)")
      ("max-attempts", po::value<std::string>()->value_name("N"), "this check's own max_attempts")
      ("backoff", po::value<std::string>()->value_name("D[..MAX]"),
       "this check's own retry backoff: the first wait, doubling, at most MAX (e.g. 1m..1h)");
}

JobPolicy check_policy_of(const Invocation& in) {
  JobPolicy policy;
  if (in.has("max-checks")) policy.max_checks = in.parsed("max-checks", max_checks_syntax);
  if (in.has("max-attempts")) {
    policy.max_attempts = in.parsed("max-attempts", [](std::string_view t) { return whole_number_syntax(t, "max_attempts"); });
  }
  if (in.has("backoff")) {
    const Backoff backoff = in.parsed("backoff", backoff_syntax);
    policy.backoff = backoff.first;
    policy.backoff_max = backoff.most;
  }
  return policy;
}

int parse_max_checks(std::string_view text) {
  if (text == "unlimited") return 0;
  return whole_number_within(text, 1, 1000000, "max_checks (a number or unlimited)");
}

int parse_max_attempts(std::string_view text) { return whole_number_within(text, 1, 1000, "max_attempts"); }

Backoff parse_backoff(std::string_view text) {
  const Backoff backoff = backoff_of(text, wait_of);
  if (backoff.most && *backoff.most < backoff.first) {
    throw InvalidInput("invalid backoff '" + std::string(text) + "': the ceiling is shorter than the first wait");
  }
  return backoff;
}

std::chrono::seconds parse_run_timeout(std::string_view text) { return wait_of(text, "timeout"); }

void add_default_policy_options(po::options_description& desc) {
  desc.add_options()
      ("default-max-checks", po::value<std::string>()->value_name("N|unlimited"),
       "for a class whose coded policy and registry row do not say: runs a check may make (default: the "
       "settings' max_checks)")
      ("default-max-attempts", po::value<std::string>()->value_name("N"),
       "likewise, failed attempts in a row before a check ends failed (default: the settings')")
      ("default-backoff", po::value<std::string>()->value_name("D[..MAX]"),
       "likewise, the first retry's wait, doubling each attempt up to MAX (default: one slot, at most 1d)")
      ("default-timeout", po::value<std::string>()->value_name("DURATION"),
       "likewise, how long one run may take (default: the settings' job_timeout)");
}

JobPolicy default_policy_of(const Invocation& in) {
  JobPolicy policy;
  if (in.has("default-max-checks")) policy.max_checks = in.parsed("default-max-checks", parse_max_checks);
  if (in.has("default-max-attempts")) policy.max_attempts = in.parsed("default-max-attempts", parse_max_attempts);
  if (in.has("default-backoff")) {
    const Backoff backoff = in.parsed("default-backoff", parse_backoff);
    policy.backoff = backoff.first;
    policy.backoff_max = backoff.most;
  }
  if (in.has("default-timeout")) policy.timeout = in.parsed("default-timeout", parse_run_timeout);
  return policy;
}

}  // namespace prescient::cli
