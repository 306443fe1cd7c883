#pragma once
// Where a recurring schedule bound to a calendar fires (docs/schedules.md, "Bound to a calendar"): an
// occurrence in the calendar's open time fires as it is; one in closed time is skipped, or moved to the
// calendar's next opening, where the occurrences moved there fire once, as one occurrence at that instant.
// The runner's cron class and `prescient cron show` both place occurrences through this.
#include <optional>
#include <vector>

#include "prescient/cron_spec.hpp"
#include "prescient/open_time.hpp"
#include "prescient/time.hpp"

namespace prescient {

struct CalendarBinding {
  const OpenTime* open_time = nullptr;  // none: the schedule is not bound, and every occurrence fires as it is
  WhenClosed when_closed = WhenClosed::skip;

  // Where the occurrence fires; nothing when it is skipped (or moved past the calendar's range).
  std::optional<TimePoint> place(TimePoint occurrence) const;
  // Where `offset` after a placed occurrence lies (a window's place or a jitter): counted in open time when
  // bound, so that it never lands in closed time; the offset as it is when not (or past the range).
  TimePoint offset(TimePoint placed, Micros offset) const;

  struct Firing {
    TimePoint occurrence;  // as the spec gives it: a schedule's cursor moves over these
    TimePoint at;          // where it fires (place)
  };
  // The first occurrence after `after` that fires, looking at no more than `most` occurrences: a skipped
  // stretch of closed time is jumped whole (the next occurrence looked at is the first from its end).
  std::optional<Firing> next_firing(const CronSpec& spec, const TimeZone& zone, TimePoint after, TimePoint anchor,
                                    int most = 1000) const;
};

// Up to `count` places where `spec` fires after `after`, in order, each once.
std::vector<TimePoint> next_firings(const CronSpec& spec, const TimeZone& zone, TimePoint after, TimePoint anchor,
                                    int count, const CalendarBinding& binding);

}  // namespace prescient
