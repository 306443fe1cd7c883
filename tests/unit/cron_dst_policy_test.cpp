// The DST policies of a schedule (docs/schedules.md, "Daylight saving time"): every value of dst_repeated and
// dst_missing across both changes of 2026 in zones of both hemispheres and of a 30-minute change, for fixed-time
// and wildcard specs. The expected firings were computed by a brute-force scan of every minute with Python's
// zoneinfo, apart from this code, and are written here as they are.
#include <catch2/catch.hpp>

#include <array>
#include <span>
#include <string>
#include <vector>

#include "prescient/cron_spec.hpp"
#include "prescient/errors.hpp"
#include "prescient/time_text.hpp"
#include "prescient/time_zone.hpp"

using namespace prescient;

namespace {

constexpr std::array<const char*, 5> kRepeatedValues{"auto", "first", "last", "both", "none"};
constexpr std::array<const char*, 3> kMissingValues{"auto", "shift", "skip"};

std::vector<std::string> firings_under(const char* spec, DstPolicy policy, const char* zone, const char* from,
                                       int count) {
  std::vector<std::string> out;
  const CronSpec cron = CronSpec::parse(spec, policy);
  const TimePoint after = parse_time(from);
  for (const TimePoint t : next_occurrences(cron, find_time_zone(zone), after, after, count)) {
    out.push_back(format_time(t));
  }
  return out;
}

// Which change of clocks a row crosses: its value is then dst_repeated's (back) or dst_missing's (forward).
enum class Clocks { back, forward };

struct DstRow {
  const char* spec;
  const char* zone;
  const char* from;
  Clocks clocks;
  const char* value;
  std::vector<std::string> expected;
};

}  // namespace

TEST_CASE("cron DST policy: every value across both changes of 2026") {
  const DstRow rows[] = {
      // Europe/Berlin, 2026-03-29
      {"30 2 * * *", "Europe/Berlin", "2026-03-27T22:59:00Z", Clocks::forward, "auto",
       {"2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"}},
      {"30 2 * * *", "Europe/Berlin", "2026-03-27T22:59:00Z", Clocks::forward, "shift",
       {"2026-03-28T01:30:00Z", "2026-03-29T01:30:00Z", "2026-03-30T00:30:00Z"}},
      {"30 2 * * *", "Europe/Berlin", "2026-03-27T22:59:00Z", Clocks::forward, "skip",
       {"2026-03-28T01:30:00Z", "2026-03-30T00:30:00Z"}},
      {"*/30 * * * *", "Europe/Berlin", "2026-03-28T23:29:00Z", Clocks::forward, "auto",
       {"2026-03-28T23:30:00Z", "2026-03-29T00:00:00Z", "2026-03-29T00:30:00Z", "2026-03-29T01:00:00Z",
        "2026-03-29T01:30:00Z", "2026-03-29T02:00:00Z"}},
      {"*/30 * * * *", "Europe/Berlin", "2026-03-28T23:29:00Z", Clocks::forward, "shift",
       {"2026-03-28T23:30:00Z", "2026-03-29T00:00:00Z", "2026-03-29T00:30:00Z", "2026-03-29T01:00:00Z",
        "2026-03-29T01:30:00Z", "2026-03-29T02:00:00Z"}},
      {"*/30 * * * *", "Europe/Berlin", "2026-03-28T23:29:00Z", Clocks::forward, "skip",
       {"2026-03-28T23:30:00Z", "2026-03-29T00:00:00Z", "2026-03-29T00:30:00Z", "2026-03-29T01:00:00Z",
        "2026-03-29T01:30:00Z", "2026-03-29T02:00:00Z"}},
      {"0 */2 * * *", "Europe/Berlin", "2026-03-28T22:59:00Z", Clocks::forward, "auto",
       {"2026-03-28T23:00:00Z", "2026-03-29T02:00:00Z", "2026-03-29T04:00:00Z"}},
      {"0 */2 * * *", "Europe/Berlin", "2026-03-28T22:59:00Z", Clocks::forward, "shift",
       {"2026-03-28T23:00:00Z", "2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z", "2026-03-29T04:00:00Z"}},
      {"0 */2 * * *", "Europe/Berlin", "2026-03-28T22:59:00Z", Clocks::forward, "skip",
       {"2026-03-28T23:00:00Z", "2026-03-29T02:00:00Z", "2026-03-29T04:00:00Z"}},
      // Europe/Berlin, 2026-10-25
      {"30 2 * * *", "Europe/Berlin", "2026-10-23T21:59:00Z", Clocks::back, "auto",
       {"2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}},
      {"30 2 * * *", "Europe/Berlin", "2026-10-23T21:59:00Z", Clocks::back, "first",
       {"2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}},
      {"30 2 * * *", "Europe/Berlin", "2026-10-23T21:59:00Z", Clocks::back, "last",
       {"2026-10-24T00:30:00Z", "2026-10-25T01:30:00Z", "2026-10-26T01:30:00Z"}},
      {"30 2 * * *", "Europe/Berlin", "2026-10-23T21:59:00Z", Clocks::back, "both",
       {"2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z", "2026-10-26T01:30:00Z"}},
      {"30 2 * * *", "Europe/Berlin", "2026-10-23T21:59:00Z", Clocks::back, "none",
       {"2026-10-24T00:30:00Z", "2026-10-26T01:30:00Z"}},
      {"*/30 * * * *", "Europe/Berlin", "2026-10-24T22:29:00Z", Clocks::back, "auto",
       {"2026-10-24T22:30:00Z", "2026-10-24T23:00:00Z", "2026-10-24T23:30:00Z", "2026-10-25T00:00:00Z",
        "2026-10-25T00:30:00Z", "2026-10-25T01:00:00Z", "2026-10-25T01:30:00Z", "2026-10-25T02:00:00Z",
        "2026-10-25T02:30:00Z", "2026-10-25T03:00:00Z"}},
      {"*/30 * * * *", "Europe/Berlin", "2026-10-24T22:29:00Z", Clocks::back, "first",
       {"2026-10-24T22:30:00Z", "2026-10-24T23:00:00Z", "2026-10-24T23:30:00Z", "2026-10-25T00:00:00Z",
        "2026-10-25T00:30:00Z", "2026-10-25T02:00:00Z", "2026-10-25T02:30:00Z", "2026-10-25T03:00:00Z"}},
      {"*/30 * * * *", "Europe/Berlin", "2026-10-24T22:29:00Z", Clocks::back, "last",
       {"2026-10-24T22:30:00Z", "2026-10-24T23:00:00Z", "2026-10-24T23:30:00Z", "2026-10-25T01:00:00Z",
        "2026-10-25T01:30:00Z", "2026-10-25T02:00:00Z", "2026-10-25T02:30:00Z", "2026-10-25T03:00:00Z"}},
      {"*/30 * * * *", "Europe/Berlin", "2026-10-24T22:29:00Z", Clocks::back, "both",
       {"2026-10-24T22:30:00Z", "2026-10-24T23:00:00Z", "2026-10-24T23:30:00Z", "2026-10-25T00:00:00Z",
        "2026-10-25T00:30:00Z", "2026-10-25T01:00:00Z", "2026-10-25T01:30:00Z", "2026-10-25T02:00:00Z",
        "2026-10-25T02:30:00Z", "2026-10-25T03:00:00Z"}},
      {"*/30 * * * *", "Europe/Berlin", "2026-10-24T22:29:00Z", Clocks::back, "none",
       {"2026-10-24T22:30:00Z", "2026-10-24T23:00:00Z", "2026-10-24T23:30:00Z", "2026-10-25T02:00:00Z",
        "2026-10-25T02:30:00Z", "2026-10-25T03:00:00Z"}},
      // America/New_York, 2026-03-08
      {"30 2 * * *", "America/New_York", "2026-03-07T04:59:00Z", Clocks::forward, "auto",
       {"2026-03-07T07:30:00Z", "2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"}},
      {"30 2 * * *", "America/New_York", "2026-03-07T04:59:00Z", Clocks::forward, "shift",
       {"2026-03-07T07:30:00Z", "2026-03-08T07:30:00Z", "2026-03-09T06:30:00Z"}},
      {"30 2 * * *", "America/New_York", "2026-03-07T04:59:00Z", Clocks::forward, "skip",
       {"2026-03-07T07:30:00Z", "2026-03-09T06:30:00Z"}},
      {"*/30 * * * *", "America/New_York", "2026-03-08T05:29:00Z", Clocks::forward, "auto",
       {"2026-03-08T05:30:00Z", "2026-03-08T06:00:00Z", "2026-03-08T06:30:00Z", "2026-03-08T07:00:00Z",
        "2026-03-08T07:30:00Z", "2026-03-08T08:00:00Z"}},
      {"*/30 * * * *", "America/New_York", "2026-03-08T05:29:00Z", Clocks::forward, "shift",
       {"2026-03-08T05:30:00Z", "2026-03-08T06:00:00Z", "2026-03-08T06:30:00Z", "2026-03-08T07:00:00Z",
        "2026-03-08T07:30:00Z", "2026-03-08T08:00:00Z"}},
      {"*/30 * * * *", "America/New_York", "2026-03-08T05:29:00Z", Clocks::forward, "skip",
       {"2026-03-08T05:30:00Z", "2026-03-08T06:00:00Z", "2026-03-08T06:30:00Z", "2026-03-08T07:00:00Z",
        "2026-03-08T07:30:00Z", "2026-03-08T08:00:00Z"}},
      {"0 */2 * * *", "America/New_York", "2026-03-08T04:59:00Z", Clocks::forward, "auto",
       {"2026-03-08T05:00:00Z", "2026-03-08T08:00:00Z", "2026-03-08T10:00:00Z"}},
      {"0 */2 * * *", "America/New_York", "2026-03-08T04:59:00Z", Clocks::forward, "shift",
       {"2026-03-08T05:00:00Z", "2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z", "2026-03-08T10:00:00Z"}},
      {"0 */2 * * *", "America/New_York", "2026-03-08T04:59:00Z", Clocks::forward, "skip",
       {"2026-03-08T05:00:00Z", "2026-03-08T08:00:00Z", "2026-03-08T10:00:00Z"}},
      // America/New_York, 2026-11-01
      {"30 1 * * *", "America/New_York", "2026-10-31T03:59:00Z", Clocks::back, "auto",
       {"2026-10-31T05:30:00Z", "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}},
      {"30 1 * * *", "America/New_York", "2026-10-31T03:59:00Z", Clocks::back, "first",
       {"2026-10-31T05:30:00Z", "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}},
      {"30 1 * * *", "America/New_York", "2026-10-31T03:59:00Z", Clocks::back, "last",
       {"2026-10-31T05:30:00Z", "2026-11-01T06:30:00Z", "2026-11-02T06:30:00Z"}},
      {"30 1 * * *", "America/New_York", "2026-10-31T03:59:00Z", Clocks::back, "both",
       {"2026-10-31T05:30:00Z", "2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z", "2026-11-02T06:30:00Z"}},
      {"30 1 * * *", "America/New_York", "2026-10-31T03:59:00Z", Clocks::back, "none",
       {"2026-10-31T05:30:00Z", "2026-11-02T06:30:00Z"}},
      {"*/30 * * * *", "America/New_York", "2026-11-01T04:29:00Z", Clocks::back, "auto",
       {"2026-11-01T04:30:00Z", "2026-11-01T05:00:00Z", "2026-11-01T05:30:00Z", "2026-11-01T06:00:00Z",
        "2026-11-01T06:30:00Z", "2026-11-01T07:00:00Z", "2026-11-01T07:30:00Z", "2026-11-01T08:00:00Z",
        "2026-11-01T08:30:00Z", "2026-11-01T09:00:00Z"}},
      {"*/30 * * * *", "America/New_York", "2026-11-01T04:29:00Z", Clocks::back, "first",
       {"2026-11-01T04:30:00Z", "2026-11-01T05:00:00Z", "2026-11-01T05:30:00Z", "2026-11-01T07:00:00Z",
        "2026-11-01T07:30:00Z", "2026-11-01T08:00:00Z", "2026-11-01T08:30:00Z", "2026-11-01T09:00:00Z"}},
      {"*/30 * * * *", "America/New_York", "2026-11-01T04:29:00Z", Clocks::back, "last",
       {"2026-11-01T04:30:00Z", "2026-11-01T06:00:00Z", "2026-11-01T06:30:00Z", "2026-11-01T07:00:00Z",
        "2026-11-01T07:30:00Z", "2026-11-01T08:00:00Z", "2026-11-01T08:30:00Z", "2026-11-01T09:00:00Z"}},
      {"*/30 * * * *", "America/New_York", "2026-11-01T04:29:00Z", Clocks::back, "both",
       {"2026-11-01T04:30:00Z", "2026-11-01T05:00:00Z", "2026-11-01T05:30:00Z", "2026-11-01T06:00:00Z",
        "2026-11-01T06:30:00Z", "2026-11-01T07:00:00Z", "2026-11-01T07:30:00Z", "2026-11-01T08:00:00Z",
        "2026-11-01T08:30:00Z", "2026-11-01T09:00:00Z"}},
      {"*/30 * * * *", "America/New_York", "2026-11-01T04:29:00Z", Clocks::back, "none",
       {"2026-11-01T04:30:00Z", "2026-11-01T07:00:00Z", "2026-11-01T07:30:00Z", "2026-11-01T08:00:00Z",
        "2026-11-01T08:30:00Z", "2026-11-01T09:00:00Z"}},
      // Australia/Sydney, 2026-04-05
      {"30 2 * * *", "Australia/Sydney", "2026-04-03T12:59:00Z", Clocks::back, "auto",
       {"2026-04-03T15:30:00Z", "2026-04-04T15:30:00Z", "2026-04-05T16:30:00Z"}},
      {"30 2 * * *", "Australia/Sydney", "2026-04-03T12:59:00Z", Clocks::back, "first",
       {"2026-04-03T15:30:00Z", "2026-04-04T15:30:00Z", "2026-04-05T16:30:00Z"}},
      {"30 2 * * *", "Australia/Sydney", "2026-04-03T12:59:00Z", Clocks::back, "last",
       {"2026-04-03T15:30:00Z", "2026-04-04T16:30:00Z", "2026-04-05T16:30:00Z"}},
      {"30 2 * * *", "Australia/Sydney", "2026-04-03T12:59:00Z", Clocks::back, "both",
       {"2026-04-03T15:30:00Z", "2026-04-04T15:30:00Z", "2026-04-04T16:30:00Z", "2026-04-05T16:30:00Z"}},
      {"30 2 * * *", "Australia/Sydney", "2026-04-03T12:59:00Z", Clocks::back, "none",
       {"2026-04-03T15:30:00Z", "2026-04-05T16:30:00Z"}},
      {"*/30 * * * *", "Australia/Sydney", "2026-04-04T13:29:00Z", Clocks::back, "auto",
       {"2026-04-04T13:30:00Z", "2026-04-04T14:00:00Z", "2026-04-04T14:30:00Z", "2026-04-04T15:00:00Z",
        "2026-04-04T15:30:00Z", "2026-04-04T16:00:00Z", "2026-04-04T16:30:00Z", "2026-04-04T17:00:00Z",
        "2026-04-04T17:30:00Z", "2026-04-04T18:00:00Z"}},
      {"*/30 * * * *", "Australia/Sydney", "2026-04-04T13:29:00Z", Clocks::back, "first",
       {"2026-04-04T13:30:00Z", "2026-04-04T14:00:00Z", "2026-04-04T14:30:00Z", "2026-04-04T15:00:00Z",
        "2026-04-04T15:30:00Z", "2026-04-04T17:00:00Z", "2026-04-04T17:30:00Z", "2026-04-04T18:00:00Z"}},
      {"*/30 * * * *", "Australia/Sydney", "2026-04-04T13:29:00Z", Clocks::back, "last",
       {"2026-04-04T13:30:00Z", "2026-04-04T14:00:00Z", "2026-04-04T14:30:00Z", "2026-04-04T16:00:00Z",
        "2026-04-04T16:30:00Z", "2026-04-04T17:00:00Z", "2026-04-04T17:30:00Z", "2026-04-04T18:00:00Z"}},
      {"*/30 * * * *", "Australia/Sydney", "2026-04-04T13:29:00Z", Clocks::back, "both",
       {"2026-04-04T13:30:00Z", "2026-04-04T14:00:00Z", "2026-04-04T14:30:00Z", "2026-04-04T15:00:00Z",
        "2026-04-04T15:30:00Z", "2026-04-04T16:00:00Z", "2026-04-04T16:30:00Z", "2026-04-04T17:00:00Z",
        "2026-04-04T17:30:00Z", "2026-04-04T18:00:00Z"}},
      {"*/30 * * * *", "Australia/Sydney", "2026-04-04T13:29:00Z", Clocks::back, "none",
       {"2026-04-04T13:30:00Z", "2026-04-04T14:00:00Z", "2026-04-04T14:30:00Z", "2026-04-04T17:00:00Z",
        "2026-04-04T17:30:00Z", "2026-04-04T18:00:00Z"}},
      // Australia/Sydney, 2026-10-04
      {"30 2 * * *", "Australia/Sydney", "2026-10-02T13:59:00Z", Clocks::forward, "auto",
       {"2026-10-02T16:30:00Z", "2026-10-03T16:00:00Z", "2026-10-04T15:30:00Z"}},
      {"30 2 * * *", "Australia/Sydney", "2026-10-02T13:59:00Z", Clocks::forward, "shift",
       {"2026-10-02T16:30:00Z", "2026-10-03T16:30:00Z", "2026-10-04T15:30:00Z"}},
      {"30 2 * * *", "Australia/Sydney", "2026-10-02T13:59:00Z", Clocks::forward, "skip",
       {"2026-10-02T16:30:00Z", "2026-10-04T15:30:00Z"}},
      {"*/30 * * * *", "Australia/Sydney", "2026-10-03T14:29:00Z", Clocks::forward, "auto",
       {"2026-10-03T14:30:00Z", "2026-10-03T15:00:00Z", "2026-10-03T15:30:00Z", "2026-10-03T16:00:00Z",
        "2026-10-03T16:30:00Z", "2026-10-03T17:00:00Z"}},
      {"*/30 * * * *", "Australia/Sydney", "2026-10-03T14:29:00Z", Clocks::forward, "shift",
       {"2026-10-03T14:30:00Z", "2026-10-03T15:00:00Z", "2026-10-03T15:30:00Z", "2026-10-03T16:00:00Z",
        "2026-10-03T16:30:00Z", "2026-10-03T17:00:00Z"}},
      {"*/30 * * * *", "Australia/Sydney", "2026-10-03T14:29:00Z", Clocks::forward, "skip",
       {"2026-10-03T14:30:00Z", "2026-10-03T15:00:00Z", "2026-10-03T15:30:00Z", "2026-10-03T16:00:00Z",
        "2026-10-03T16:30:00Z", "2026-10-03T17:00:00Z"}},
      {"0 */2 * * *", "Australia/Sydney", "2026-10-03T13:59:00Z", Clocks::forward, "auto",
       {"2026-10-03T14:00:00Z", "2026-10-03T17:00:00Z", "2026-10-03T19:00:00Z"}},
      {"0 */2 * * *", "Australia/Sydney", "2026-10-03T13:59:00Z", Clocks::forward, "shift",
       {"2026-10-03T14:00:00Z", "2026-10-03T16:00:00Z", "2026-10-03T17:00:00Z", "2026-10-03T19:00:00Z"}},
      {"0 */2 * * *", "Australia/Sydney", "2026-10-03T13:59:00Z", Clocks::forward, "skip",
       {"2026-10-03T14:00:00Z", "2026-10-03T17:00:00Z", "2026-10-03T19:00:00Z"}},
      // Australia/Lord_Howe, 2026-04-05
      {"45 1 * * *", "Australia/Lord_Howe", "2026-04-03T12:59:00Z", Clocks::back, "auto",
       {"2026-04-03T14:45:00Z", "2026-04-04T14:45:00Z", "2026-04-05T15:15:00Z"}},
      {"45 1 * * *", "Australia/Lord_Howe", "2026-04-03T12:59:00Z", Clocks::back, "first",
       {"2026-04-03T14:45:00Z", "2026-04-04T14:45:00Z", "2026-04-05T15:15:00Z"}},
      {"45 1 * * *", "Australia/Lord_Howe", "2026-04-03T12:59:00Z", Clocks::back, "last",
       {"2026-04-03T14:45:00Z", "2026-04-04T15:15:00Z", "2026-04-05T15:15:00Z"}},
      {"45 1 * * *", "Australia/Lord_Howe", "2026-04-03T12:59:00Z", Clocks::back, "both",
       {"2026-04-03T14:45:00Z", "2026-04-04T14:45:00Z", "2026-04-04T15:15:00Z", "2026-04-05T15:15:00Z"}},
      {"45 1 * * *", "Australia/Lord_Howe", "2026-04-03T12:59:00Z", Clocks::back, "none",
       {"2026-04-03T14:45:00Z", "2026-04-05T15:15:00Z"}},
      {"*/30 * * * *", "Australia/Lord_Howe", "2026-04-04T13:29:00Z", Clocks::back, "auto",
       {"2026-04-04T13:30:00Z", "2026-04-04T14:00:00Z", "2026-04-04T14:30:00Z", "2026-04-04T15:00:00Z",
        "2026-04-04T15:30:00Z", "2026-04-04T16:00:00Z", "2026-04-04T16:30:00Z", "2026-04-04T17:00:00Z",
        "2026-04-04T17:30:00Z"}},
      {"*/30 * * * *", "Australia/Lord_Howe", "2026-04-04T13:29:00Z", Clocks::back, "first",
       {"2026-04-04T13:30:00Z", "2026-04-04T14:00:00Z", "2026-04-04T14:30:00Z", "2026-04-04T15:30:00Z",
        "2026-04-04T16:00:00Z", "2026-04-04T16:30:00Z", "2026-04-04T17:00:00Z", "2026-04-04T17:30:00Z"}},
      {"*/30 * * * *", "Australia/Lord_Howe", "2026-04-04T13:29:00Z", Clocks::back, "last",
       {"2026-04-04T13:30:00Z", "2026-04-04T14:00:00Z", "2026-04-04T15:00:00Z", "2026-04-04T15:30:00Z",
        "2026-04-04T16:00:00Z", "2026-04-04T16:30:00Z", "2026-04-04T17:00:00Z", "2026-04-04T17:30:00Z"}},
      {"*/30 * * * *", "Australia/Lord_Howe", "2026-04-04T13:29:00Z", Clocks::back, "both",
       {"2026-04-04T13:30:00Z", "2026-04-04T14:00:00Z", "2026-04-04T14:30:00Z", "2026-04-04T15:00:00Z",
        "2026-04-04T15:30:00Z", "2026-04-04T16:00:00Z", "2026-04-04T16:30:00Z", "2026-04-04T17:00:00Z",
        "2026-04-04T17:30:00Z"}},
      {"*/30 * * * *", "Australia/Lord_Howe", "2026-04-04T13:29:00Z", Clocks::back, "none",
       {"2026-04-04T13:30:00Z", "2026-04-04T14:00:00Z", "2026-04-04T15:30:00Z", "2026-04-04T16:00:00Z",
        "2026-04-04T16:30:00Z", "2026-04-04T17:00:00Z", "2026-04-04T17:30:00Z"}},
      // Australia/Lord_Howe, 2026-10-04
      {"15 2 * * *", "Australia/Lord_Howe", "2026-10-02T13:29:00Z", Clocks::forward, "auto",
       {"2026-10-02T15:45:00Z", "2026-10-03T15:30:00Z", "2026-10-04T15:15:00Z"}},
      {"15 2 * * *", "Australia/Lord_Howe", "2026-10-02T13:29:00Z", Clocks::forward, "shift",
       {"2026-10-02T15:45:00Z", "2026-10-03T15:45:00Z", "2026-10-04T15:15:00Z"}},
      {"15 2 * * *", "Australia/Lord_Howe", "2026-10-02T13:29:00Z", Clocks::forward, "skip",
       {"2026-10-02T15:45:00Z", "2026-10-04T15:15:00Z"}},
      {"*/30 * * * *", "Australia/Lord_Howe", "2026-10-03T13:59:00Z", Clocks::forward, "auto",
       {"2026-10-03T14:00:00Z", "2026-10-03T14:30:00Z", "2026-10-03T15:00:00Z", "2026-10-03T15:30:00Z",
        "2026-10-03T16:00:00Z", "2026-10-03T16:30:00Z", "2026-10-03T17:00:00Z"}},
      {"*/30 * * * *", "Australia/Lord_Howe", "2026-10-03T13:59:00Z", Clocks::forward, "shift",
       {"2026-10-03T14:00:00Z", "2026-10-03T14:30:00Z", "2026-10-03T15:00:00Z", "2026-10-03T15:30:00Z",
        "2026-10-03T16:00:00Z", "2026-10-03T16:30:00Z", "2026-10-03T17:00:00Z"}},
      {"*/30 * * * *", "Australia/Lord_Howe", "2026-10-03T13:59:00Z", Clocks::forward, "skip",
       {"2026-10-03T14:00:00Z", "2026-10-03T14:30:00Z", "2026-10-03T15:00:00Z", "2026-10-03T15:30:00Z",
        "2026-10-03T16:00:00Z", "2026-10-03T16:30:00Z", "2026-10-03T17:00:00Z"}},
      {"0 */2 * * *", "Australia/Lord_Howe", "2026-10-03T13:29:00Z", Clocks::forward, "auto",
       {"2026-10-03T13:30:00Z", "2026-10-03T17:00:00Z", "2026-10-03T19:00:00Z"}},
      {"0 */2 * * *", "Australia/Lord_Howe", "2026-10-03T13:29:00Z", Clocks::forward, "shift",
       {"2026-10-03T13:30:00Z", "2026-10-03T15:30:00Z", "2026-10-03T17:00:00Z", "2026-10-03T19:00:00Z"}},
      {"0 */2 * * *", "Australia/Lord_Howe", "2026-10-03T13:29:00Z", Clocks::forward, "skip",
       {"2026-10-03T13:30:00Z", "2026-10-03T17:00:00Z", "2026-10-03T19:00:00Z"}},
  };
  for (const DstRow& row : rows) {
    // The other option must not matter across this change: each of its values gives the same firings.
    const auto check = [&](const char* repeated, const char* missing) {
      INFO(row.spec << " in " << row.zone << " after " << row.from << ", dst_repeated " << repeated
                    << ", dst_missing " << missing);
      CHECK(firings_under(row.spec, DstPolicy::parse(repeated, missing), row.zone, row.from,
                          static_cast<int>(row.expected.size())) == row.expected);
    };
    if (row.clocks == Clocks::back) {
      for (const char* missing : kMissingValues) check(row.value, missing);
    } else {
      for (const char* repeated : kRepeatedValues) check(repeated, row.value);
    }
  }
}

// auto is cron's rule (the cases of cron_spec_test.cpp hold it unchanged); for a wildcard-first spec it is
// exactly both and skip, and for a fixed time its repeated half is exactly first, over a whole year.
TEST_CASE("cron DST policy: auto is both and skip for wildcard specs, first for fixed times") {
  const TimePoint from = parse_time("2026-01-01T00:00:00Z");
  for (const char* zone : {"Europe/Berlin", "America/New_York", "Australia/Sydney", "Australia/Lord_Howe",
                           "Pacific/Chatham", "America/Santiago"}) {
    const TimeZone& tz = find_time_zone(zone);
    for (const char* spec : {"*/30 * * * *", "0 * * * *", "15 */2 * * *", "* 1-3 * * SUN"}) {
      INFO(spec << " in " << zone);
      CHECK(next_occurrences(CronSpec::parse(spec), tz, from, from, 9000) ==
            next_occurrences(CronSpec::parse(spec, DstPolicy::parse("both", "skip")), tz, from, from, 9000));
    }
    for (const char* spec : {"30 2 * * *", "45 1 * * *", "0,30 0-3 * * *", "@daily"}) {
      INFO(spec << " in " << zone);
      CHECK(next_occurrences(CronSpec::parse(spec, DstPolicy::parse("auto", "skip")), tz, from, from, 1500) ==
            next_occurrences(CronSpec::parse(spec, DstPolicy::parse("first", "skip")), tz, from, from, 1500));
    }
  }
}

TEST_CASE("cron DST policy: a shifted time that is an occurrence anyway fires once, in order") {
  const DstPolicy shift = DstPolicy::parse("auto", "shift");
  // New York, 2026-03-08, 02:00 EST -> 03:00 EDT: 02:00 and 02:30 shift onto 03:00 and 03:30, which fire anyway.
  CHECK(firings_under("0,30 2,3 * * *", shift, "America/New_York", "2026-03-08T00:00:00Z", 3) ==
        std::vector<std::string>{"2026-03-08T07:00:00Z", "2026-03-08T07:30:00Z", "2026-03-09T06:00:00Z"});
  // Lord Howe, 2026-10-04, 02:00 +10:30 -> 02:30 +11: 02:00 shifts onto 02:30, an occurrence anyway.
  CHECK(firings_under("0,30 2 * * *", shift, "Australia/Lord_Howe", "2026-10-03T13:00:00Z", 2) ==
        std::vector<std::string>{"2026-10-03T15:30:00Z", "2026-10-04T15:00:00Z"});
  // And shifted times fall among the real ones by their instants: 02:00 and 02:15 shift to 02:30 and 02:45,
  // either side of 02:40.
  CHECK(firings_under("0,15,40 2 * * *", shift, "Australia/Lord_Howe", "2026-10-03T13:00:00Z", 4) ==
        std::vector<std::string>{"2026-10-03T15:30:00Z", "2026-10-03T15:40:00Z", "2026-10-03T15:45:00Z",
                                 "2026-10-04T15:00:00Z"});
}

TEST_CASE("cron DST policy: a value that is not a policy is refused, naming it") {
  CHECK_THROWS_WITH(DstPolicy::parse("twice", "auto"),
                    "dst_repeated: 'twice' is not a policy (use auto, first, last, both or none)");
  CHECK_THROWS_WITH(DstPolicy::parse("auto", "forward"), "dst_missing: 'forward' is not a policy (use auto, shift or skip)");
  CHECK_THROWS_AS(DstPolicy::parse("", "auto"), InvalidInput);
}
