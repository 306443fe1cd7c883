#include "prescient/outcome.hpp"

#include <algorithm>

#include "prescient/errors.hpp"

namespace prescient {

Outcome parse_outcome(std::string_view text) {
  const bool formed = !text.empty() && text.size() <= 64 &&
                      std::all_of(text.begin(), text.end(), [](char c) { return (c >= 'a' && c <= 'z') || c == '_'; });
  if (!formed) {
    throw InvalidInput("unknown outcome '" + std::string(text.substr(0, 64)) +
                       "' (an outcome is lower-case letters and _, one of prescient.outcomes())");
  }
  return Outcome(text);
}

}  // namespace prescient
