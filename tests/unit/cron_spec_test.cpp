#include <catch2/catch.hpp>
#include <date/tz.h>

#include <span>

#include "prescient/cron_spec.hpp"
#include "prescient/time_zone.hpp"
#include "prescient/errors.hpp"
#include "prescient/time_text.hpp"

using namespace prescient;

namespace {

std::vector<std::string> firings(const char* spec, const char* zone, const char* from, int count,
                                 const char* anchor = nullptr) {
  const CronSpec cron = CronSpec::parse(spec);
  const TimeZone& tz = find_time_zone(zone);
  TimePoint at = parse_time(from);
  const TimePoint anchored = parse_time(anchor ? anchor : from);
  std::vector<std::string> out;
  for (int i = 0; i < count; ++i) {
    const auto next = cron.next(at, tz, anchored);
    if (!next) break;
    out.push_back(format_time(*next));
    at = *next;
  }
  return out;
}

using Times = std::vector<std::string>;

// A table of specs and the firings expected after a time.
struct Case {
  const char* spec;
  const char* zone;
  const char* from;
  Times expected;
};

void check_firings(std::span<const Case> cases) {
  for (const Case& c : cases) {
    INFO(c.spec << " in " << c.zone << " after " << c.from);
    CHECK(firings(c.spec, c.zone, c.from, static_cast<int>(c.expected.size())) == c.expected);
  }
}

}  // namespace

TEST_CASE("cron next: known answers") {
  const Case cases[] = {
      {"*/15 * * * *", "UTC", "2026-11-21T10:05:00Z",
       {"2026-11-21T10:15:00Z", "2026-11-21T10:30:00Z", "2026-11-21T10:45:00Z"}},
      {"*/15 * * * *", "UTC", "2026-11-21T10:15:00Z", {"2026-11-21T10:30:00Z"}},  // strictly after
      // Month ends: only months with a 31st.
      {"0 0 31 * *", "UTC", "2026-01-31T00:00:00Z",
       {"2026-03-31T00:00:00Z", "2026-05-31T00:00:00Z", "2026-07-31T00:00:00Z", "2026-08-31T00:00:00Z"}},
      // Leap years, and 2100 is not one.
      {"0 12 29 2 *", "UTC", "2026-01-01T00:00:00Z", {"2028-02-29T12:00:00Z", "2032-02-29T12:00:00Z"}},
      {"0 0 29 2 *", "UTC", "2096-03-01T00:00:00Z", {"2104-02-29T00:00:00Z"}},
      // Both day fields restricted: the 13th OR a Friday (Nov 2026: Fridays 6, 13, 20).
      {"0 0 13 * 5", "UTC", "2026-11-01T00:00:00Z",
       {"2026-11-06T00:00:00Z", "2026-11-13T00:00:00Z", "2026-11-20T00:00:00Z", "2026-11-27T00:00:00Z",
        "2026-12-04T00:00:00Z"}},
      {"0 0 1,15 * MON", "UTC", "2026-11-21T00:00:00Z",
       {"2026-11-23T00:00:00Z", "2026-11-30T00:00:00Z", "2026-12-01T00:00:00Z"}},
      // One day field restricted: only that one counts. Names, any case.
      {"30 9 * jan-Mar MON-FRI", "UTC", "2026-11-21T00:00:00Z",
       {"2027-01-01T09:30:00Z", "2027-01-04T09:30:00Z"}},
      {"0 0 * * 7", "UTC", "2026-11-21T00:00:00Z", {"2026-11-22T00:00:00Z"}},  // 7 is Sunday
      {"0 8-18/4 * * *", "UTC", "2026-11-21T09:00:00Z",
       {"2026-11-21T12:00:00Z", "2026-11-21T16:00:00Z", "2026-11-22T08:00:00Z"}},
      {"5/20 * * * *", "UTC", "2026-11-21T10:00:00Z",
       {"2026-11-21T10:05:00Z", "2026-11-21T10:25:00Z", "2026-11-21T10:45:00Z", "2026-11-21T11:05:00Z"}},
      // Seconds (6 fields).
      {"*/20 * * * * *", "UTC", "2026-11-21T10:05:00Z",
       {"2026-11-21T10:05:20Z", "2026-11-21T10:05:40Z", "2026-11-21T10:06:00Z"}},
      // Macros.
      {"@hourly", "UTC", "2026-11-21T10:05:00Z", {"2026-11-21T11:00:00Z"}},
      {"@daily", "UTC", "2026-11-21T10:05:00Z", {"2026-11-22T00:00:00Z"}},
      {"@weekly", "UTC", "2026-11-21T10:05:00Z", {"2026-11-22T00:00:00Z", "2026-11-29T00:00:00Z"}},
      {"@monthly", "UTC", "2026-11-21T10:05:00Z", {"2026-12-01T00:00:00Z"}},
      {"@yearly", "UTC", "2026-11-21T10:05:00Z", {"2027-01-01T00:00:00Z"}},
  };
  check_firings(cases);
}

// cronie's rule (man 8 cron), both directions, in zones with 1-hour, 30-minute and 45-minute-offset
// shifts and one that skips midnight. Real-time specs (`*` first in minute or hour) fire at every instant
// whose wall time matches; fixed-time specs fire once, skipped times at the first instant after the gap.
TEST_CASE("cron next through DST: real-time cadence for * specs, fixed times once") {
  const Case cases[] = {
      // America/New_York: fall back 2026-11-01 02:00 EDT -> 01:00 EST (06:00Z); spring forward
      // 2026-03-08 02:00 EST -> 03:00 EDT (07:00Z).
      // 01:45 EDT, then 01:00-01:45 EST, then 02:00 EST: no gap in the quarter hours.
      {"*/15 * * * *", "America/New_York", "2026-11-01T05:30:00Z",
       {"2026-11-01T05:45:00Z", "2026-11-01T06:00:00Z", "2026-11-01T06:15:00Z", "2026-11-01T06:30:00Z",
        "2026-11-01T06:45:00Z", "2026-11-01T07:00:00Z"}},
      {"0 * * * *", "America/New_York", "2026-11-01T04:30:00Z",  // both 01:00s
       {"2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z"}},
      {"30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z",  // fixed: the first 01:30 only
       {"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}},
      {"*/15 * * * *", "America/New_York", "2026-03-08T06:30:00Z",  // 02:00-02:45 do not exist
       {"2026-03-08T06:45:00Z", "2026-03-08T07:00:00Z", "2026-03-08T07:15:00Z"}},
      {"0 * * * *", "America/New_York", "2026-03-08T05:30:00Z",
       {"2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z"}},
      {"30 2 * * *", "America/New_York", "2026-03-07T12:00:00Z",  // fixed: at 03:00 EDT, after the gap
       {"2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"}},
      // Europe/Berlin: fall back 2026-10-25 03:00 CEST -> 02:00 CET (01:00Z); spring forward 2026-03-29
      // 02:00 CET -> 03:00 CEST (01:00Z).
      {"0 * * * *", "Europe/Berlin", "2026-10-24T23:30:00Z",  // 02:00 CEST, 02:00 CET, 03:00 CET
       {"2026-10-25T00:00:00Z", "2026-10-25T01:00:00Z", "2026-10-25T02:00:00Z"}},
      {"30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z", {"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}},
      {"0 * * * *", "Europe/Berlin", "2026-03-28T23:30:00Z",  // 01:00 CET, 03:00 CEST: 02:00 does not exist
       {"2026-03-29T00:00:00Z", "2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z"}},
      {"30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z", {"2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"}},
      {"0 9 * * 1-5", "Europe/Berlin", "2026-03-27T12:00:00Z", {"2026-03-30T07:00:00Z"}},  // 09:00 CEST
      // America/Santiago: spring forward at midnight, 2026-09-06 00:00 -04 -> 01:00 -03 (04:00Z); fall back
      // 2026-04-05 00:00 -03 -> 23:00 -04 on the 4th (03:00Z).
      {"0 * * * *", "America/Santiago", "2026-09-06T02:30:00Z",  // 23:00, (no 00:00), 01:00, 02:00
       {"2026-09-06T03:00:00Z", "2026-09-06T04:00:00Z", "2026-09-06T05:00:00Z"}},
      {"0 0 * * *", "America/Santiago", "2026-09-05T12:00:00Z",  // fixed: the skipped midnight at 01:00
       {"2026-09-06T04:00:00Z", "2026-09-07T03:00:00Z"}},
      {"0 * * * *", "America/Santiago", "2026-04-05T01:30:00Z",  // 23:00 -03, 23:00 -04, 00:00 -04
       {"2026-04-05T02:00:00Z", "2026-04-05T03:00:00Z", "2026-04-05T04:00:00Z"}},
      {"0 23 * * *", "America/Santiago", "2026-04-04T12:00:00Z", {"2026-04-05T02:00:00Z", "2026-04-06T03:00:00Z"}},
      // Australia/Lord_Howe, a 30-minute shift: spring forward 2026-10-04 02:00 +10:30 -> 02:30 +11
      // (15:30Z on the 3rd); fall back 2026-04-05 02:00 +11 -> 01:30 +10:30 (15:00Z on the 4th).
      {"*/15 * * * *", "Australia/Lord_Howe", "2026-10-03T15:00:00Z",  // 01:45, (no 02:00, 02:15), 02:30, 02:45
       {"2026-10-03T15:15:00Z", "2026-10-03T15:30:00Z", "2026-10-03T15:45:00Z"}},
      {"15 2 * * *", "Australia/Lord_Howe", "2026-10-03T12:00:00Z",  // fixed: at 02:30, after the gap
       {"2026-10-03T15:30:00Z", "2026-10-04T15:15:00Z"}},
      {"*/15 * * * *", "Australia/Lord_Howe", "2026-04-04T14:20:00Z",  // 01:30 and 01:45 twice
       {"2026-04-04T14:30:00Z", "2026-04-04T14:45:00Z", "2026-04-04T15:00:00Z", "2026-04-04T15:15:00Z",
        "2026-04-04T15:30:00Z"}},
      {"45 1 * * *", "Australia/Lord_Howe", "2026-04-04T12:00:00Z", {"2026-04-04T14:45:00Z", "2026-04-05T15:15:00Z"}},
      // Pacific/Chatham, shifts at 02:45/03:45 local: spring forward 2026-09-27 02:45 +12:45 -> 03:45 +13:45
      // (14:00Z on the 26th); fall back 2026-04-05 03:45 +13:45 -> 02:45 +12:45 (14:00Z on the 4th).
      {"0 * * * *", "Pacific/Chatham", "2026-09-26T12:30:00Z",  // 02:00, then 04:00: never 03:45
       {"2026-09-26T13:15:00Z", "2026-09-26T14:15:00Z"}},
      {"0 3 * * *", "Pacific/Chatham", "2026-09-26T12:00:00Z",  // fixed: at 03:45, after the gap
       {"2026-09-26T14:00:00Z", "2026-09-27T13:15:00Z"}},
      {"0 * * * *", "Pacific/Chatham", "2026-04-04T12:30:00Z",  // 03:00 twice, then 04:00
       {"2026-04-04T13:15:00Z", "2026-04-04T14:15:00Z", "2026-04-04T15:15:00Z"}},
      {"0 3 * * *", "Pacific/Chatham", "2026-04-04T12:00:00Z", {"2026-04-04T13:15:00Z", "2026-04-05T14:15:00Z"}},
  };
  check_firings(cases);
}

TEST_CASE("cron next past 2037 follows the zone file's closing rule: DST goes on") {
  // The zone files list changes to 2037; after that their closing rule holds (prescient/time_zone.hpp).
  // Read by date/tz alone, Berlin had no summer time from 2038 and these fired an hour late.
  const Case cases[] = {
      {"0 12 * * *", "Europe/Berlin", "2038-06-01T00:00:00Z", {"2038-06-01T10:00:00Z"}},
      {"0 12 * * *", "Europe/Berlin", "2038-12-01T00:00:00Z", {"2038-12-01T11:00:00Z"}},
      {"30 2 * * *", "America/New_York", "2040-03-10T12:00:00Z",  // 02:30 does not exist on the 11th
       {"2040-03-11T07:00:00Z", "2040-03-12T06:30:00Z"}},
      {"0 9 * * *", "Australia/Sydney", "2060-01-10T00:00:00Z", {"2060-01-10T22:00:00Z"}},  // summer, +11
      {"*/30 * * * *", "Europe/London", "2050-10-30T00:15:00Z",  // 01:00 to 02:00 twice (by real time)
       {"2050-10-30T00:30:00Z", "2050-10-30T01:00:00Z", "2050-10-30T01:30:00Z"}},
  };
  check_firings(cases);
}

TEST_CASE("@every is anchored to the schedule's creation and does not drift; @at fires once") {
  CHECK(firings("@every 1h", "UTC", "2026-11-21T10:05:00Z", 3) ==
        Times{"2026-11-21T11:05:00Z", "2026-11-21T12:05:00Z", "2026-11-21T13:05:00Z"});
  // Asked late (10 minutes after a firing), the series stays on its anchor.
  CHECK(firings("@every 1h", "UTC", "2026-11-21T12:15:00Z", 2, "2026-11-21T10:05:00Z") ==
        Times{"2026-11-21T13:05:00Z", "2026-11-21T14:05:00Z"});
  CHECK(firings("@every 90s", "Europe/Berlin", "2026-11-21T10:00:00Z", 2) ==
        Times{"2026-11-21T10:01:30Z", "2026-11-21T10:03:00Z"});
  CHECK(firings("@at 2026-12-24T18:00:00+01:00", "UTC", "2026-11-21T10:00:00Z", 3) ==
        Times{"2026-12-24T17:00:00Z"});
  CHECK(CronSpec::parse("@at 2026-12-24T18:00:00Z").one_shot());
}

TEST_CASE("invalid cron specs are refused naming the field and the reason") {
  struct Case {
    const char* spec;
    const char* reason;
  };
  const Case cases[] = {
      {"", "empty"},
      {"* * * *", "4 fields"},
      {"* * * * * * *", "7 fields"},
      {"60 * * * *", "minute field: 60 is outside 0-59"},
      {"* 24 * * *", "hour field: 24"},
      {"* * 0 * *", "day-of-month field: 0"},
      {"* * * 13 *", "month field: 13"},
      {"* * * * 8", "day-of-week field: 8 is outside 0-7"},
      {"*/0 * * * *", "step '0'"},
      {"5-1 * * * *", "runs backwards"},
      {"* * * FOO *", "'FOO' is not a number or a name"},
      {"1,,2 * * * *", "empty list item"},
      {"@every", "@every takes one duration"},
      {"@every -1m", "negative"},
      {"@every 0s", "at least 1s"},
      {"@sometimes", "unknown macro"},
      {"@at tomorrow", "'tomorrow'"},
      {"0 0 30 2 *", "can never fire"},
      {"0 0 31 4,6,9,11 *", "can never fire"},
  };
  for (const Case& c : cases) {
    INFO(c.spec);
    CHECK_THROWS_AS(CronSpec::parse(c.spec), InvalidInput);
    CHECK_THROWS_WITH(CronSpec::parse(c.spec), Catch::Contains(c.reason));
  }
  // Restricting both day fields makes an impossible date possible again: Feb 30 OR Mondays.
  CHECK_NOTHROW(CronSpec::parse("0 0 30 2 1"));
  CHECK_THROWS_WITH(find_time_zone("Mars/Olympus"), Catch::Contains("'Mars/Olympus'"));
}
