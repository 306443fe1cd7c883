// prescient calendar: calendars set, listed and asked from the command line (docs/business-time.md). The
// arithmetic itself is tested in tests/db/business_time_test.cpp and against the oracle; here, the doors.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "process.hpp"
#include "test_database.hpp"

using namespace prescient::testing;
using nlohmann::json;

namespace {

// Monday to Friday 09:00-17:00 in Berlin, Christmas closed, Christmas Eve a half day.
const char* kOffice = R"({"hours": {"mon": ["09:00-17:00"], "tue": ["09:00-17:00"], "wed": ["09:00-17:00"],
  "thu": ["09:00-17:00"], "fri": ["09:00-17:00"]}, "holidays": ["12-25"], "days": [{"date": "12-24", "hours": ["09:00-12:00"]}]})";

ProcessResult calendar(const std::vector<std::string>& args, const std::string& url, const std::string& stdin_text = "") {
  std::vector<std::string> all{"calendar"};
  all.insert(all.end(), args.begin(), args.end());
  return run_prescient(with_db(all, url), {}, stdin_text);
}

}  // namespace

TEST_CASE("calendar add, holiday, set, list, show and next from the command line") {
  const std::string url = create_migrated_database();
  const ProcessResult added = calendar({"add", "office", "--zone", "Europe/Berlin", "--file", "-", "--by", "ops"}, url, kOffice);
  REQUIRE(added.exit_code == 0);
  CHECK(added.out == "calendar office: version 1\n");
  // Friday 27 November 2026 15:00 in Berlin (14:00Z) + 4 open hours: Monday 11:00.
  const ProcessResult four_hours = calendar({"next", "office", "--from", "2026-11-27T14:00:00Z", "--in", "4h"}, url);
  CHECK(four_hours.out == "2026-11-30T10:00:00Z (Mon 2026-11-30 11:00, calendar office version 1)\n");
  // + 3 business days: Wednesday, the same time of day.
  const ProcessResult three_days = calendar({"next", "office", "--from", "2026-11-27T14:00:00Z", "--in", "3bd", "--json"}, url);
  CHECK(json::parse(three_days.out) == json{{"at", "2026-12-02T14:00:00Z"}, {"wall", "Wed 2026-12-02 15:00"}, {"version", 1}});
  // Friday evening: the next opening is Monday 09:00; a holiday on that Monday makes it Tuesday, in version 2.
  CHECK(calendar({"next", "office", "--from", "2026-11-27T20:00:00Z"}, url).out ==
        "2026-11-30T08:00:00Z (Mon 2026-11-30 09:00, calendar office version 1)\n");
  CHECK(calendar({"holiday", "office", "--day", "2026-11-30", "--day", "12-25"}, url).out == "calendar office: version 2\n");
  CHECK(calendar({"next", "office", "--from", "2026-11-27T20:00:00Z"}, url).out ==
        "2026-12-01T08:00:00Z (Tue 2026-12-01 09:00, calendar office version 2)\n");
  // Inside open time, the next opening is the time itself.
  CHECK(calendar({"next", "office", "--from", "2026-12-01T09:30:00Z", "--json"}, url).out.starts_with(
      R"({"at":"2026-12-01T09:30:00Z")"));
  // show: the definition as set (the holiday added once, not twice) and the next openings in its zone.
  const json shown = json::parse(calendar({"show", "office", "--from", "2026-12-23T12:00:00Z", "--openings", "3", "--json"}, url).out);
  CHECK(shown["version"] == 2);
  CHECK(shown["changed_by"] == "root");  // holiday was not given --by
  CHECK(shown["definition"]["holidays"] == json{"12-25", "2026-11-30"});
  CHECK(shown["openings"] == json{
      {{"opens_at", "2026-12-23T08:00:00Z"}, {"closes_at", "2026-12-23T16:00:00Z"},
       {"opens_wall", "Wed 2026-12-23 09:00"}, {"closes_wall", "Wed 2026-12-23 17:00"}},
      {{"opens_at", "2026-12-24T08:00:00Z"}, {"closes_at", "2026-12-24T11:00:00Z"},
       {"opens_wall", "Thu 2026-12-24 09:00"}, {"closes_wall", "Thu 2026-12-24 12:00"}},
      {{"opens_at", "2026-12-28T08:00:00Z"}, {"closes_at", "2026-12-28T16:00:00Z"},
       {"opens_wall", "Mon 2026-12-28 09:00"}, {"closes_wall", "Mon 2026-12-28 17:00"}}});
  // set keeps the zone when none is given, and makes the next version.
  CHECK(calendar({"set", "office", "--file", "-"}, url, R"({"hours": {"sat": ["10:00-14:00"]}})").out ==
        "calendar office: version 3\n");
  const ProcessResult listed = calendar({"list", "--json"}, url);
  REQUIRE(json::parse(listed.out).size() == 1);
  CHECK(json::parse(listed.out)[0]["time_zone"] == "Europe/Berlin");
  CHECK(json::parse(listed.out)[0]["version"] == 3);
}

TEST_CASE("calendar refuses bad input in one line naming the value, and writes nothing") {
  const std::string url = create_migrated_database();
  REQUIRE(calendar({"add", "office", "--zone", "Europe/Berlin", "--file", "-"}, url, kOffice).exit_code == 0);
  check_refused({
      {{"calendar", "add", "office", "--zone", "UTC", "--file", "/dev/null"}, "is not JSON"},
      {{"calendar", "add", "x", "--zone", "Mars/Base", "--file", "/etc/hostname"}, "'/etc/hostname' is not JSON"},
      {{"calendar", "add", "x", "--file", "/etc/hostname"}, "missing --zone"},
      {{"calendar", "add", "x", "--zone", "UTC"}, "missing --file"},
      {{"calendar", "holiday", "office", "--day", "02-30"}, "holiday \"02-30\" names no day"},
      {{"calendar", "holiday", "office"}, "missing --day"},
      {{"calendar", "next", "office", "--in", "0bd"}, "business days 0: give 1 or more"},
      {{"calendar", "next", "office", "--in", "-4h"}, "business time -04:00:00"},
      {{"calendar", "next", "office", "--in", "soon"}, "business delay 'soon'"},
      {{"calendar", "next", "office", "--from", "2150-01-01T00:00:00Z"}, "outside calendar 'office''s range"},
      {{"calendar", "forget", "office"}, "unknown calendar action 'forget'"},
  }, url);
  // Refused by the database, so nothing is written: a zone that does not exist, a name outside the rule,
  // a calendar that exists already, a calendar that is never open.
  const auto refused = [&](const std::vector<std::string>& args, const std::string& text, const char* names) {
    const ProcessResult r = calendar(args, url, text);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains(names));
  };
  refused({"add", "x", "--zone", "Mars/Base", "--file", "-"}, kOffice, "time zone 'Mars/Base' does not exist");
  refused({"add", "x<b>", "--zone", "UTC", "--file", "-"}, kOffice, "holds '<'");
  refused({"add", "office", "--zone", "UTC", "--file", "-"}, kOffice, "calendar 'office' exists (version 1)");
  refused({"set", "office", "--file", "-"}, R"({"hours": {}})", "is never open");
  const ProcessResult listed = calendar({"list", "--json"}, url);
  REQUIRE(json::parse(listed.out).size() == 1);
  CHECK(json::parse(listed.out)[0]["version"] == 1);
  // An unknown calendar is "not found", exit 3.
  const ProcessResult unknown = calendar({"next", "nope"}, url);
  CHECK(unknown.exit_code == 3);
  CHECK_THAT(unknown.err, Catch::Contains("no calendar named 'nope'"));
}
