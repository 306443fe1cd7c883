#include "prescient/duration.hpp"

#include <array>
#include <cstdint>

#include "prescient/errors.hpp"

namespace prescient {
namespace {

struct Unit {
  char symbol;
  std::int64_t seconds;
};
// Largest first: the order a duration must be written in.
constexpr std::array<Unit, 4> kUnits{{{'d', 86400}, {'h', 3600}, {'m', 60}, {'s', 1}}};

[[noreturn]] void refuse_duration(std::string_view text, const std::string& why) {
  throw InvalidInput("invalid duration '" + std::string(text) + "': " + why +
                     " (write it like 90s, 15m, 1h30m or 2d)");
}

}  // namespace

std::chrono::seconds parse_duration(std::string_view text) {
  if (text.empty()) refuse_duration(text, "it is empty");
  if (text.front() == '-') refuse_duration(text, "durations cannot be negative");
  std::int64_t total = 0;
  std::size_t next_unit = 0;  // units must come in kUnits order, each at most once
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::int64_t number = 0;
    const std::size_t digits_start = pos;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      number = number * 10 + (text[pos] - '0');
      if (number > kMaxDuration.count()) refuse_duration(text, "it is longer than 100 years");
      ++pos;
    }
    if (pos == digits_start) refuse_duration(text, "expected a number at '" + std::string(text.substr(pos)) + "'");
    if (pos == text.size()) refuse_duration(text, "the number " + std::to_string(number) + " has no unit");
    const char symbol = text[pos++];
    std::size_t u = next_unit;
    while (u < kUnits.size() && kUnits[u].symbol != symbol) ++u;
    if (u == kUnits.size()) {
      bool known = false;
      for (const Unit& unit : kUnits) known = known || unit.symbol == symbol;
      refuse_duration(text, known ? std::string("unit '") + symbol + "' is repeated or out of order"
                         : std::string("unknown unit '") + symbol + "'");
    }
    next_unit = u + 1;
    if (number > (kMaxDuration.count() - total) / kUnits[u].seconds) {
      refuse_duration(text, "it is longer than 100 years");
    }
    total += number * kUnits[u].seconds;
  }
  return std::chrono::seconds{total};
}

std::chrono::seconds parse_signed_duration(std::string_view text) {
  if (!text.empty() && text.front() == '-' && text.size() > 1 && text[1] != '-') return -parse_duration(text.substr(1));
  return parse_duration(text);
}

std::string format_duration(std::chrono::seconds d) {
  std::int64_t rest = d.count();
  if (rest == 0) return "0s";
  std::string out;
  if (rest < 0) {
    out = "-";
    rest = -rest;
  }
  for (const Unit& unit : kUnits) {
    if (rest >= unit.seconds) {
      out += std::to_string(rest / unit.seconds) + unit.symbol;
      rest %= unit.seconds;
    }
  }
  return out;
}

}  // namespace prescient
