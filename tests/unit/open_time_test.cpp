// A calendar's open time as the runner looks it up, and where a schedule bound to it fires
// (prescient/open_time.hpp, prescient/calendar_binding.hpp). The spans are written here as the database would
// give them; tests/db/schedule_calendar_test.cpp fires bound schedules against the database's own arithmetic.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "prescient/calendar_binding.hpp"
#include "prescient/errors.hpp"
#include "prescient/time_text.hpp"
#include "prescient/time_zone.hpp"

using namespace prescient;

namespace {

TimePoint at(const char* text) { return parse_time(text); }

// Friday and Monday 09:00-17:00 UTC, the weekend closed.
OpenTime friday_and_monday() {
  return OpenTime("desk", 3,
                  {{at("2026-11-27T09:00:00Z"), at("2026-11-27T17:00:00Z")},
                   {at("2026-11-30T09:00:00Z"), at("2026-11-30T17:00:00Z")}});
}

std::vector<std::string> texts(const std::vector<TimePoint>& times) {
  std::vector<std::string> out;
  for (const TimePoint t : times) out.push_back(format_time(t));
  return out;
}

}  // namespace

TEST_CASE("open time: open, the next opening, and open time after an instant") {
  const OpenTime open = friday_and_monday();
  struct Row {
    const char* instant;
    bool open;
    std::optional<const char*> opening;
    std::optional<const char*> two_hours_later;
  };
  for (const Row& row : std::vector<Row>{
           {"2026-11-27T08:59:59Z", false, "2026-11-27T09:00:00Z", "2026-11-27T11:00:00Z"},
           {"2026-11-27T09:00:00Z", true, "2026-11-27T09:00:00Z", "2026-11-27T11:00:00Z"},
           {"2026-11-27T16:00:00Z", true, "2026-11-27T16:00:00Z", "2026-11-30T10:00:00Z"},
           // Two hours from 15:00 end at the closing: a firing lands in open time, so at Monday's opening.
           {"2026-11-27T15:00:00Z", true, "2026-11-27T15:00:00Z", "2026-11-30T09:00:00Z"},
           {"2026-11-27T17:00:00Z", false, "2026-11-30T09:00:00Z", "2026-11-30T11:00:00Z"},
           {"2026-11-28T12:00:00Z", false, "2026-11-30T09:00:00Z", "2026-11-30T11:00:00Z"},
           {"2026-11-30T16:30:00Z", true, "2026-11-30T16:30:00Z", std::nullopt},
           {"2026-11-30T17:00:00Z", false, std::nullopt, std::nullopt},
       }) {
    INFO(row.instant);
    CHECK(open.is_open(at(row.instant)) == row.open);
    const auto opening = open.opening_from(at(row.instant));
    CHECK(opening.has_value() == row.opening.has_value());
    if (opening && row.opening) CHECK(format_time(*opening) == *row.opening);
    const auto later = open.after_open_time(at(row.instant), std::chrono::hours(2));
    CHECK(later.has_value() == row.two_hours_later.has_value());
    if (later && row.two_hours_later) CHECK(format_time(*later) == *row.two_hours_later);
  }
  CHECK(open.after_open_time(at("2026-11-28T12:00:00Z"), Micros{0}) == at("2026-11-30T09:00:00Z"));
}

TEST_CASE("open time: spans out of order or overlapping are refused, naming the calendar and version") {
  CHECK_THROWS_WITH(OpenTime("desk", 2,
                             {{at("2026-11-27T09:00:00Z"), at("2026-11-27T17:00:00Z")},
                              {at("2026-11-27T16:00:00Z"), at("2026-11-27T18:00:00Z")}}),
                    "calendar desk version 2: its open time at 2026-11-27T16:00:00Z is not in order");
  CHECK_THROWS_AS(OpenTime("desk", 1, {{at("2026-11-27T09:00:00Z"), at("2026-11-27T09:00:00Z")}}), InvalidInput);
  CHECK(OpenTime("none", 1, {}).opening_from(at("2026-11-27T09:00:00Z")) == std::nullopt);
}

TEST_CASE("calendar binding: skip drops closed occurrences, move fires them once at the next opening") {
  const OpenTime open = friday_and_monday();
  // 08:30, 12:30 and 18:30 every day, from Friday morning.
  const CronSpec spec = CronSpec::parse("30 8,12,18 * * *");
  const TimeZone& utc = find_time_zone("UTC");
  const TimePoint from = at("2026-11-27T00:00:00Z");
  CHECK(texts(next_firings(spec, utc, from, from, 4, {})) ==
        std::vector<std::string>{"2026-11-27T08:30:00Z", "2026-11-27T12:30:00Z", "2026-11-27T18:30:00Z",
                                 "2026-11-28T08:30:00Z"});
  CHECK(texts(next_firings(spec, utc, from, from, 3, {.open_time = &open, .when_closed = WhenClosed::skip})) ==
        std::vector<std::string>{"2026-11-27T12:30:00Z", "2026-11-30T12:30:00Z"});
  // Friday 08:30 opens at 09:00; Friday 18:30 and the whole weekend, with Monday 08:30, fire once at Monday 09:00.
  CHECK(texts(next_firings(spec, utc, from, from, 5, {.open_time = &open, .when_closed = WhenClosed::move})) ==
        std::vector<std::string>{"2026-11-27T09:00:00Z", "2026-11-27T12:30:00Z", "2026-11-30T09:00:00Z",
                                 "2026-11-30T12:30:00Z"});

  const CalendarBinding skip{.open_time = &open, .when_closed = WhenClosed::skip};
  const auto firing = skip.next_firing(spec, utc, at("2026-11-27T12:30:00Z"), from);
  REQUIRE(firing);
  CHECK(format_time(firing->occurrence) == "2026-11-30T12:30:00Z");
  CHECK(firing->at == firing->occurrence);
  // Every minute through a closed weekend is jumped, not walked: found with two looks.
  CHECK(skip.next_firing(CronSpec::parse("* * * * *"), utc, at("2026-11-27T17:00:00Z"), from, 2)->at ==
        at("2026-11-30T09:00:00Z"));
  // A window's or jitter's offset counts open time when bound, and is added as it is when not.
  CHECK(skip.offset(at("2026-11-27T16:30:00Z"), std::chrono::hours(1)) == at("2026-11-30T09:30:00Z"));
  CHECK(CalendarBinding{}.offset(at("2026-11-27T16:30:00Z"), std::chrono::hours(1)) == at("2026-11-27T17:30:00Z"));
}

TEST_CASE("calendar binding: when_closed is skip or move, anything else named") {
  CHECK(parse_when_closed("skip") == WhenClosed::skip);
  CHECK(parse_when_closed("move") == WhenClosed::move);
  CHECK_THROWS_WITH(parse_when_closed("later"), "when_closed: 'later' is not a policy (use skip or move)");
}
