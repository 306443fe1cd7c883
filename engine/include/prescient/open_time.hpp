#pragma once
// A calendar's open time as the runner reads it, for the schedules bound to a calendar (docs/schedules.md,
// "Bound to a calendar"). What is open is SQL's rule: prescient.calendar_set computes the calendar's stretches
// of open time as instants (prescient.calendar_span), with the server's tzdata; this only looks them up, so
// both sides agree on every instant by construction.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "prescient/time.hpp"

namespace prescient {

// A stretch of open time, from `opens` (open) to `closes` (closed again).
struct OpenSpan {
  TimePoint opens, closes;
};

class OpenTime {
 public:
  // Throws InvalidInput unless the spans are in order, do not overlap and each opens before it closes.
  OpenTime(std::string calendar, int version, std::vector<OpenSpan> spans);

  const std::string& calendar() const { return calendar_; }
  int version() const { return version_; }
  bool is_open(TimePoint t) const;
  // t when the calendar is open then, else its next opening; nothing when it never opens again.
  std::optional<TimePoint> opening_from(TimePoint t) const;
  // The instant at which `open` of open time has passed since t (counted from opening_from(t)): t's opening
  // itself for zero; nothing when the calendar closes for good before.
  std::optional<TimePoint> after_open_time(TimePoint t, Micros open) const;

 private:
  // The first span that closes after t (it may open after t too), or end.
  std::vector<OpenSpan>::const_iterator first_closing_after(TimePoint t) const;

  std::string calendar_;
  int version_;
  std::vector<OpenSpan> spans_;
};

// What a schedule bound to a calendar does with an occurrence in closed time: skip it, or move it to the
// calendar's next opening (where the occurrences moved there fire once).
enum class WhenClosed { skip, move };
// Throws InvalidInput naming the text unless it is "skip" or "move".
WhenClosed parse_when_closed(std::string_view text);

}  // namespace prescient
