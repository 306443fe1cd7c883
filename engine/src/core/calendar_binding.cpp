#include "prescient/calendar_binding.hpp"

#include <algorithm>

namespace prescient {

std::optional<TimePoint> CalendarBinding::place(TimePoint occurrence) const {
  if (!open_time) return occurrence;
  if (when_closed == WhenClosed::skip) return open_time->is_open(occurrence) ? std::optional(occurrence) : std::nullopt;
  return open_time->opening_from(occurrence);
}

TimePoint CalendarBinding::offset(TimePoint placed, Micros offset) const {
  if (open_time && offset > Micros{0}) {
    if (const auto at = open_time->after_open_time(placed, offset)) return *at;
  }
  return placed + offset;
}

std::optional<CalendarBinding::Firing> CalendarBinding::next_firing(const CronSpec& spec, const TimeZone& zone,
                                                                    TimePoint after, TimePoint anchor,
                                                                    int most) const {
  for (int looked = 0; looked < most; ++looked) {
    const auto occurrence = spec.next(after, zone, anchor);
    if (!occurrence) return std::nullopt;
    if (const auto at = place(*occurrence)) return Firing{.occurrence = *occurrence, .at = *at};
    // Skipped: closed then. The next occurrence that may fire is at the next opening or after it.
    const auto opening = open_time->opening_from(*occurrence);
    if (!opening) return std::nullopt;
    after = std::max(*occurrence, *opening - Micros{1});
  }
  return std::nullopt;
}

std::vector<TimePoint> next_firings(const CronSpec& spec, const TimeZone& zone, TimePoint after, TimePoint anchor,
                                    int count, const CalendarBinding& binding) {
  std::vector<TimePoint> out;
  while (static_cast<int>(out.size()) < count) {
    const auto firing = binding.next_firing(spec, zone, after, anchor);
    if (!firing) break;
    if (out.empty() || out.back() != firing->at) out.push_back(firing->at);
    // The occurrences moved to the same opening fire there once: look on from it.
    after = std::max(firing->occurrence, firing->at - Micros{1});
  }
  return out;
}

}  // namespace prescient
