#pragma once
// Cron specs: when a recurring schedule fires. Pure: parse, validate, and the next occurrence after a
// time, in an IANA time zone (wall-clock rules through DST, from the system tzdata).
#include <bitset>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "prescient/time.hpp"

namespace prescient {

class TimeZone;  // prescient/time_zone.hpp

// What a schedule does where the clocks change (docs/schedules.md, "Daylight saving time").
// A local time that occurs twice, when the clocks go back: fire at the first of its two instants, the
// last, both, or none. `automatic` is cron's rule, which depends on the spec (CronSpec::next).
enum class DstRepeated { automatic, first, last, both, none };
// A local time that does not occur, when the clocks go forward. `shift`: read it at the offset before
// the change, so it fires the gap's length later on the new clock (02:30 in a 1-hour gap at 03:30), at
// the instant it would have had without the change; `skip`: it does not fire.
enum class DstMissing { automatic, shift, skip };

struct DstPolicy {
  DstRepeated repeated = DstRepeated::automatic;
  DstMissing missing = DstMissing::automatic;

  // From the names a schedule stores (auto, first, last, both, none; auto, shift, skip). Throws
  // InvalidInput naming the option and the value, in prescient.cron_field_problem's words.
  static DstPolicy parse(std::string_view repeated, std::string_view missing);
};

// Accepted forms:
//  - 5 fields: minute hour day-of-month month day-of-week; 6 fields: a leading second field.
//    Each field: *, N, A-B, */S, A-B/S, N/S, and comma lists of those; months JAN..DEC and days
//    SUN..SAT by name (any case); day-of-week 0-7, both 0 and 7 being Sunday.
//    When both day fields are restricted (neither starts with *), a day matches if EITHER matches.
//  - @yearly (@annually), @monthly, @weekly, @daily (@midnight), @hourly.
//  - @every DURATION: every DURATION from an anchor (the schedule's creation), drift-free.
//  - @at TIME: once.
// Throws InvalidInput naming the field and the reason; a spec that can never fire (0 0 30 2 *) too.
class CronSpec {
 public:
  static CronSpec parse(std::string_view text, DstPolicy dst = {});

  // The first occurrence strictly after `after`, or nothing (an @at in the past). `anchor`: for @every.
  // Field specs are local wall time in `zone`, through DST by the spec's DstPolicy. Its `automatic` is
  // cronie's rule (man 8 cron):
  //  - `*` first in the minute or the hour field (`*/15 * * * *`, `0 * * * *`): real-time cadence. Every
  //    instant whose wall time matches fires: a repeated local time at both of its instants, a skipped
  //    one not at all.
  //  - otherwise (`30 2 * * *`), a fixed time of day: a skipped local time fires once at the first
  //    instant after the gap, a repeated one once, at the first of its two instants.
  // Occurrences are instants, each once: a skipped time shifted onto an instant that is an occurrence
  // anyway fires once.
  std::optional<TimePoint> next(TimePoint after, const TimeZone& zone, TimePoint anchor) const;

  const std::string& text() const { return text_; }
  bool one_shot() const { return kind_ == Kind::at; }

 private:
  friend struct CronScan;  // the search for the next occurrence (cron_spec.cpp)

  enum class Kind { fields, every, at };
  Kind kind_ = Kind::fields;
  std::string text_;
  std::bitset<60> seconds_, minutes_;
  std::bitset<24> hours_;
  std::bitset<32> days_of_month_;  // 1..31
  std::bitset<13> months_;         // 1..12
  std::bitset<7> days_of_week_;    // 0..6, Sunday = 0
  bool dom_restricted_ = false, dow_restricted_ = false;
  bool real_time_ = false;  // `*` first in the minute or hour field
  DstPolicy dst_;
  std::chrono::seconds every_{0};
  TimePoint at_;
};

// Up to `count` occurrences of `spec` after `after`, in order (fewer when it stops, as an @at does).
std::vector<TimePoint> next_occurrences(const CronSpec& spec, const TimeZone& zone, TimePoint after,
                                        TimePoint anchor, int count);

// `t` as wall time in `zone` with its offset, to the second: "2026-03-29T03:30:00+02:00".
std::string format_local_time(TimePoint t, const TimeZone& zone);

}  // namespace prescient
