// prescient calendar: calendars set, listed and asked from the command line (docs/business-time.md). The
// arithmetic itself is tested in tests/db/business_time_test.cpp and against the oracle; here, the doors.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <soci/soci.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

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
      {{"calendar", "next", "office", "--in", "0bd"}, "business delay '0bd': give 1 or more business days"},
      {{"calendar", "next", "office", "--in", "-4h"}, "business delay '-4h': write a length of open time"},
      {{"calendar", "next", "office", "--in", "1d"}, "business delay '1d': write a length of open time"},
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

namespace {

// A folder of the test's own holding a config file and calendars' definitions, removed when it goes.
class CalendarFolder {
 public:
  CalendarFolder() : path_(std::filesystem::temp_directory_path() / ("prescient-calendars-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path_);
  }
  ~CalendarFolder() { std::filesystem::remove_all(path_); }
  CalendarFolder(const CalendarFolder&) = delete;
  CalendarFolder& operator=(const CalendarFolder&) = delete;
  std::string path(const std::string& name) const { return (path_ / name).string(); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name) << text;
    return path(name);
  }

 private:
  std::filesystem::path path_;
};

// Night shifts, Sunday to Thursday 22:00-06:00.
const char* kNights = R"({"hours": {"sun": ["22:00-06:00"], "mon": ["22:00-06:00"], "tue": ["22:00-06:00"],
  "wed": ["22:00-06:00"], "thu": ["22:00-06:00"]}})";

// Two calendars as a team keeps them: one file named relative to the config's folder, one by its whole path.
std::string calendars_config(const CalendarFolder& folder, const std::string& office_zone, const std::string& nights_section) {
  return "# the team's calendars\n"            // 1
         "[calendar office]\n"                  // 2
         "zone = " + office_zone + "\n"         // 3
         "file = office.json\n"                 // 4
         "\n"                                   // 5
         + nights_section + "\n"                // 6
         "zone = Europe/Berlin\n"               // 7
         "file = " + folder.path("nights.json") + "\n";  // 8
}

json versions_of(const std::string& url) {
  json versions = json::object();
  for (const json& c : json::parse(calendar({"list", "--json"}, url).out)) versions[c["name"].get<std::string>()] = {c["time_zone"], c["version"]};
  return versions;
}

}  // namespace

TEST_CASE("calendar apply: the config file's [calendar NAME] sections, a next version only where one differs, all or none") {
  const std::string url = create_migrated_database();
  const CalendarFolder folder;
  folder.write("office.json", kOffice);
  folder.write("nights.json", kNights);
  const std::string conf = folder.write("prescient.conf", calendars_config(folder, "Europe/Berlin", "[calendar support eu/nights]"));
  const auto apply = [&](std::vector<std::string> more = {}) {
    std::vector<std::string> args{"apply", "--config", conf, "--by", "ops"};
    args.insert(args.end(), more.begin(), more.end());
    return calendar(args, url);
  };
  const ProcessResult added = apply();
  REQUIRE(added.exit_code == 0);
  CHECK(added.out == "calendar office: added, version 1\ncalendar support eu/nights: added, version 1\n");
  CHECK(apply().out == "calendar office: unchanged, version 1\ncalendar support eu/nights: unchanged, version 1\n");
  // The same definition written otherwise (keys in another order, other spaces) is the same to the database.
  folder.write("office.json", json::parse(kOffice).dump(2));
  CHECK(apply().out == "calendar office: unchanged, version 1\ncalendar support eu/nights: unchanged, version 1\n");
  // A definition changed: that calendar's next version only; then its zone.
  folder.write("nights.json", R"({"hours": {"sun": ["22:00-06:00"]}})");
  folder.write("prescient.conf", calendars_config(folder, "Europe/Berlin", "[calendar support eu/nights]"));
  CHECK(json::parse(apply({"--json"}).out) == json::parse(R"([
    {"name": "office", "change": "unchanged", "version": 1, "previous_version": 1},
    {"name": "support eu/nights", "change": "changed", "version": 2, "previous_version": 1}])"));
  folder.write("prescient.conf", calendars_config(folder, "Europe/Paris", "[calendar support eu/nights]"));
  CHECK(apply().out == "calendar office: set, version 2 (was 1)\ncalendar support eu/nights: unchanged, version 2\n");
  CHECK(calendar({"show", "office", "--json"}, url).out.find(R"("changed_by":"ops")") != std::string::npos);
  const json before = versions_of(url);
  CHECK(before == json{{"office", {"Europe/Paris", 2}}, {"support eu/nights", {"Europe/Berlin", 2}}});

  // Anything wrong refuses the whole file in one line naming the file, the line and the value: nothing is set,
  // not even a calendar before the one at fault (office's zone back to Berlin would be its next version).
  const auto refused = [&](const std::string& text, const std::string& line_and_value, const std::string& why) {
    folder.write("prescient.conf", text);
    const ProcessResult r = apply();
    INFO(text);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::StartsWith("prescient: " + conf + ":" + line_and_value) && Catch::Contains(why));
    CHECK(lines_of(r.err).size() == 1);
    CHECK(versions_of(url) == before);
  };
  const std::string office_back = calendars_config(folder, "Europe/Berlin", "[calendar support eu/nights]");
  refused(calendars_config(folder, "Europe/Berlin", "[calendar support eu/nights]\nzone = UTC"),
          "8: zone = Europe/Berlin: calendar support eu/nights has its zone on line 7", "");
  refused(calendars_config(folder, "Mars/Base", "[calendar support eu/nights]"), "3: zone = Mars/Base: ",
          "time zone 'Mars/Base' does not exist");
  refused(calendars_config(folder, "Europe/Berlin", "[calendar x<b>]"), "7: [calendar x<b>]: ", "holds '<'");
  refused(office_back + "colour = red\n", "9: unknown key 'colour' for [calendar support eu/nights]", "takes zone and file");
  refused(office_back + "[calendar ]\n", "9: [calendar]: a calendar's section names it", "");
  refused(office_back + "[calendar empty]\nfile = nights.json\n", "10: [calendar empty] has no zone", "");
  refused("[calendar office]\nzone = Europe/Berlin\nfile = missing.json\n", "3: file = missing.json: cannot read",
          "No such file or directory");
  folder.write("bad.json", "{\"hours\": ");
  refused("[calendar office]\nzone = Europe/Berlin\nfile = bad.json\n", "3: file = bad.json: not JSON", "");
  folder.write("bad.json", R"({"hours": {"mon": ["09:00-25:00"]}})");
  refused(office_back + "[calendar lunch]\nzone = UTC\nfile = bad.json\n", "11: file = bad.json: ", "hours.mon holds \"09:00-25:00\"");
  // What only setting finds, after office's next version was made in the same transaction: undone too.
  folder.write("nights.json", R"({"hours": {}})");
  refused(calendars_config(folder, "Europe/Berlin", "[calendar support eu/nights]"), "8: file = ", "is never open");
  // No section to apply.
  folder.write("prescient.conf", "[calendar]\nread-db = " + url + "\n");
  const ProcessResult none = apply();
  CHECK(none.exit_code == 2);
  CHECK_THAT(none.err, Catch::Contains("has no [calendar NAME] section"));
}

TEST_CASE("schedule --calendar: a business delay from flags and a bulk file; show names the calendar and version") {
  const std::string url = create_migrated_database();
  REQUIRE(calendar({"add", "office", "--zone", "Europe/Berlin", "--file", "-"}, url, kOffice).exit_code == 0);
  const std::vector<std::string> ticket{"schedule", "--job", "noop", "--entity-name", "tickets", "--calendar", "office"};
  const auto schedule = [&](std::vector<std::string> more) {
    std::vector<std::string> args = ticket;
    args.insert(args.end(), more.begin(), more.end());
    return run_prescient(with_db(args, url));
  };
  // A Saturday is closed: Monday's opening.
  const ProcessResult saturday = schedule({"--entity-key", "1", "--at", "2026-11-28T10:00:00Z", "--json"});
  REQUIRE(saturday.exit_code == 0);
  CHECK(json::parse(saturday.out)["next_check_at"] == "2026-11-30T08:00:00Z");
  // --in beside --calendar is open time; show says which calendar and version computed the time.
  const ProcessResult later = schedule({"--entity-key", "2", "--in", "4h", "--json"});
  REQUIRE(later.exit_code == 0);
  const std::string id = std::to_string(json::parse(later.out)["id"].get<long long>());
  const ProcessResult shown = run_prescient(with_db({"show", "--id", id}, url));
  CHECK_THAT(shown.out, Catch::Contains("  enqueued timed by calendar office version 1: 4h of open time\n"));
  CHECK_THAT(shown.out, Catch::Contains("check " + id + " timed by calendar office version 1: 4h of open time"));
  const json as_json = json::parse(run_prescient(with_db({"show", "--id", id, "--json"}, url)).out);
  CHECK(as_json["pending"]["calendar"] == "office");
  CHECK(as_json["pending"]["calendar_version"] == 1);
  CHECK(as_json["pending"]["business_delay"] == "4h");
  // A bulk file: `in` beside a calendar is open time too.
  const ProcessResult bulk = run_prescient(
      with_db({"schedule", "--file", "-", "--json"}, url), {},
      R"({"job": "noop", "entity_name": "tickets", "entity_key": "3", "calendar": "office", "at": "2026-11-27T14:00:00Z", "in": "3bd"})"
      "\n"
      R"({"job": "noop", "entity_name": "tickets", "entity_key": "4", "calendar": "office", "at": "2026-11-28T10:00:00Z"})"
      "\n");
  REQUIRE(bulk.exit_code == 0);
  CHECK(json::parse(bulk.out)[0]["next_check_at"] == "2026-12-02T14:00:00Z");  // Wednesday, the same time of day
  CHECK(json::parse(bulk.out)[1]["next_check_at"] == "2026-11-30T08:00:00Z");
  // Refused in one line naming the value, exit 2, nothing written.
  check_refused({
      {{"schedule", "--job", "noop", "--entity-name", "t", "--entity-key", "9", "--calendar", "nope", "--in", "4h"},
       "no calendar named 'nope'"},
      {{"schedule", "--job", "noop", "--entity-name", "t", "--entity-key", "9", "--calendar", "office", "--in", "1d"},
       "business delay '1d'"},
      {{"schedule", "--job", "noop", "--entity-name", "t", "--entity-key", "9", "--calendar", "office", "--in", "0bd"},
       "business delay '0bd': give 1 or more business days"},
      {{"schedule", "--job", "noop", "--entity-name", "t", "--entity-key", "9", "--calendar", "office", "--in", "4h",
        "--at", "2026-11-28T10:00:00Z"},
       "give either --at or --in, not both"},
  }, url);
  const ProcessResult bad_line = run_prescient(
      with_db({"schedule", "--file", "-"}, url), {},
      R"({"job": "noop", "entity_name": "tickets", "entity_key": "5", "calendar": "office", "in": "-4h"})"
      "\n");
  CHECK(bad_line.exit_code == 2);
  CHECK_THAT(bad_line.err, Catch::Contains("line 1: business delay '-4h'"));
  const ProcessResult pending = run_prescient(with_db({"list", "--json"}, url));
  CHECK(json::parse(pending.out).size() == 4);
}

// A worker's answer in business time (docs/business-time.md, "Answers in business time"): show names the
// calendar, version and delay on that run's line of the timeline, and in its JSON.
TEST_CASE("show: a run answered in business time names its calendar on the timeline") {
  const std::string url = create_migrated_database();
  REQUIRE(calendar({"add", "office", "--zone", "Europe/Berlin", "--file", "-"}, url, kOffice).exit_code == 0);
  auto db = connect_to(url);
  *db << "SELECT prescient.job_class_add('escalate', true)";
  *db << "UPDATE prescient.settings SET workers_may_pin_clock = true";
  long long id = 0, token = 0;
  *db << "SELECT id FROM prescient.schedule('escalate', 'tickets', '7', '2026-11-27T14:00:00Z',"
         " p_now => '2026-11-27T13:00:00Z')",
      soci::into(id);
  *db << "SELECT lease_token FROM prescient.worker_take('w1', '{escalate}', 10, 30, '2026-11-27T14:01:00Z')",
      soci::into(token);
  // Friday 15:01:10 in Berlin, plus 4 open hours: Monday 11:01:10, on the grid 11:02.
  *db << "SELECT count(*) FROM prescient.worker_complete('w1', ARRAY[:id]::bigint[], ARRAY[:token]::bigint[],"
         " '{NULL}', NULL, '2026-11-27T14:01:10Z', '{office}', '{4h}')",
      soci::use(id), soci::use(token);
  const std::string check = std::to_string(id);
  const ProcessResult shown = run_prescient(with_db({"show", "--id", check}, url));
  REQUIRE(shown.exit_code == 0);
  CHECK_THAT(shown.out, Catch::Contains("rescheduled to 2026-11-30T10:02:00Z"));
  CHECK_THAT(shown.out, Catch::Contains("in business time, calendar office version 1: 4h of open time"));
  const json as_json = json::parse(run_prescient(with_db({"show", "--id", check, "--json"}, url)).out);
  REQUIRE(as_json["runs"].size() == 1);
  CHECK(as_json["runs"][0]["calendar"] == "office");
  CHECK(as_json["runs"][0]["calendar_version"] == 1);
  CHECK(as_json["runs"][0]["business_delay"] == "4h");
}
