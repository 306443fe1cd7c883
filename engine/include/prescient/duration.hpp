#pragma once
// Durations as people write them: "90s", "15m", "1h30m", "2d".
#include <chrono>
#include <string>
#include <string_view>

namespace prescient {

// The longest duration accepted anywhere (100 years): far beyond any sane horizon,
// and far from overflowing a microsecond time point.
inline constexpr std::chrono::seconds kMaxDuration{100LL * 366 * 86400};

// Parses units d, h, m, s, each at most once and in that order ("1d12h", "90s", "0s").
// REQUIRES nothing; throws InvalidInput naming the text on anything else: an empty string,
// a sign, a missing or unknown unit, a repeated or misordered unit, or more than kMaxDuration.
std::chrono::seconds parse_duration(std::string_view text);

// The same with an optional leading '-' ("-5m"): for a value whose sign is judged by the rule that owns
// it (an enqueue's window, refused negative by SQL in its own words), not by the syntax.
std::chrono::seconds parse_signed_duration(std::string_view text);

// The shortest form parse_duration reads back to the same value ("1h30m", "0s").
std::string format_duration(std::chrono::seconds d);

}  // namespace prescient
