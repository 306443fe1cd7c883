#include "prescient/outcome.hpp"

#include <array>
#include <utility>

#include "prescient/errors.hpp"

namespace prescient {
namespace {

constexpr std::array<std::pair<Outcome, std::string_view>, 8> kNames{{
    {Outcome::done, "done"},
    {Outcome::cancelled, "cancelled"},
    {Outcome::failed, "failed"},
    {Outcome::guard_max_checks, "guard_max_checks"},
    {Outcome::guard_past, "guard_past"},
    {Outcome::guard_horizon, "guard_horizon"},
    {Outcome::deadline_missed, "deadline_missed"},
    {Outcome::overlap_skipped, "overlap_skipped"},
}};

}  // namespace

std::string_view to_string(Outcome outcome) {
  for (const auto& [value, name] : kNames) {
    if (value == outcome) return name;
  }
  return "done";  // unreachable: every enumerator is named above
}

Outcome parse_outcome(std::string_view text) {
  for (const auto& [value, name] : kNames) {
    if (name == text) return value;
  }
  throw InvalidInput("unknown outcome '" + std::string(text) + "' (known: " + known_outcomes() + ")");
}

std::string known_outcomes() {
  std::string out;
  for (const auto& [value, name] : kNames) out.append(out.empty() ? "" : ", ").append(name);
  return out;
}

}  // namespace prescient
