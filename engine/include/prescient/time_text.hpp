#pragma once
// Times as text: ISO-8601 with an explicit offset, or "@<unix seconds>". UTC inside.
#include <string>
#include <string_view>

#include "prescient/time.hpp"

namespace prescient {

// Accepts "2026-11-21T10:05:00Z", "...T10:05Z", fractions ("...:00.25Z", rounded *up* to the
// microsecond so a time never moves earlier), offsets "+01:00" / "+0100" / "+01", a space or
// "T" between date and time, and "@1763719500". Local times without an offset are refused:
// they are ambiguous. Throws InvalidInput naming the text and what is wrong.
TimePoint parse_time(std::string_view text);

// "2026-11-21T10:05:00Z", with ".ffffff" (trailing zeros trimmed) only when not whole seconds.
std::string format_time(TimePoint t);

}  // namespace prescient
