#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "process.hpp"
#include "test_database.hpp"

using namespace prescient::testing;
using nlohmann::json;

TEST_CASE("cron next prints firings in UTC with the local time, needs no database") {
  const ProcessResult r = run_prescient({"cron", "next", "--spec", "30 2 * * *", "--time-zone", "Europe/Berlin", "--from",
                                         "2026-03-28T12:00:00Z", "--count", "2"},
                                        {{"PRESCIENT_DATABASE_URL", "host=127.0.0.1 port=1"}});
  REQUIRE(r.exit_code == 0);
  CHECK(lines_of(r.out) == std::vector<std::string>{"2026-03-29T01:00:00Z  2026-03-29 03:00:00 CEST",
                                                    "2026-03-30T00:30:00Z  2026-03-30 02:30:00 CEST"});
  const ProcessResult j = run_prescient({"cron", "next", "--spec", "@every 90m", "--from", "2026-11-21T10:00:00Z",
                                         "--count", "2", "--json"});
  CHECK(json::parse(j.out) == json{"2026-11-21T11:30:00Z", "2026-11-21T13:00:00Z"});
  // The fall-back night in New York, as the runner fires it (tests/db/cron_sql_test.cpp): both 01:xx hours.
  const ProcessResult dst = run_prescient({"cron", "next", "--spec", "*/15 * * * *", "--time-zone", "America/New_York",
                                           "--from", "2026-11-01T05:00:00Z", "--count", "9", "--json"});
  CHECK(json::parse(dst.out) == json{"2026-11-01T05:15:00Z", "2026-11-01T05:30:00Z", "2026-11-01T05:45:00Z",
                                     "2026-11-01T06:00:00Z", "2026-11-01T06:15:00Z", "2026-11-01T06:30:00Z",
                                     "2026-11-01T06:45:00Z", "2026-11-01T07:00:00Z", "2026-11-01T07:15:00Z"});
}

TEST_CASE("cron add, list, show, update, remove from the command line") {
  const std::string url = create_migrated_database(60);
  const ProcessResult add = run_prescient(with_db(
      {"cron", "add", "--id", "standup", "--spec", "0 9 * * MON-FRI", "--time-zone", "Europe/Berlin", "--payload",
       "{\"type\": \"standup\"}", "--deadline", "10m", "--window", "1m", "--json"},
      url));
  REQUIRE(add.exit_code == 0);
  const json added = json::parse(add.out);
  CHECK(added["version"] == 1);
  CHECK(added["deadline"] == "10m");
  CHECK(added["window"] == "1m");  // a window of one slot: nothing to spread
  check_refused({
      // SQL's rules, in SQL's words (the three-door test in tests/db/client_test.cpp has them all).
      {{"cron", "add", "--id", "x", "--spec", "@daily", "--window", "0s"}, "window_seconds: 0 is not a window (at least 1)"},
      {{"cron", "add", "--id", "x", "--spec", "@daily", "--window", "-1m"},
       "window_seconds: -60 is not a window (at least 1)"},
      {{"cron", "add", "--id", "x", "--spec", "@daily", "--payload", "[1]"}, "payload: must be a JSON object"},
      {{"cron", "add", "--id", "x", "--spec", "@daily", "--window", "400d"},
       "window_seconds: 34560000 is over the horizon"},
      {{"cron", "update", "--id", "standup", "--window", "400d"}, "window_seconds: 34560000 is over the horizon"},
  }, url);
  CHECK(run_prescient(with_db({"cron", "list", "--json"}, url)).out.find("\"x\"") == std::string::npos);
  CHECK(added["catch_up"] == "one");
  CHECK(added["next_check_at"].get<std::string>().ends_with("T08:00:00Z"));  // 09:00 CET

  const json list = json::parse(run_prescient(with_db({"cron", "list", "--json"}, url)).out);
  REQUIRE(list.size() == 1);
  CHECK(list[0]["id"] == "standup");
  const json show = json::parse(run_prescient(with_db({"cron", "show", "--id", "standup", "--json"}, url)).out);
  CHECK(show["next_firings"].size() == 5);
  CHECK(show["recent_events"].empty());

  const ProcessResult update =
      run_prescient(with_db({"cron", "update", "--id", "standup", "--spec", "30 9 * * MON-FRI", "--json"}, url));
  REQUIRE(update.exit_code == 0);
  CHECK(json::parse(update.out)["version"] == 2);
  CHECK(json::parse(update.out)["next_check_at"].get<std::string>().ends_with("T08:30:00Z"));

  CHECK(run_prescient(with_db({"cron", "add", "--id", "standup", "--spec", "@daily"}, url)).exit_code == 2);
  CHECK(run_prescient(with_db({"cron", "remove", "--id", "standup"}, url)).exit_code == 0);
  CHECK(run_prescient(with_db({"cron", "remove", "--id", "standup"}, url)).exit_code == 3);
  CHECK(run_prescient(with_db({"cron", "show", "--id", "standup"}, url)).exit_code == 3);
  CHECK(json::parse(run_prescient(with_db({"cron", "list", "--json"}, url)).out).empty());
}

TEST_CASE("cron refuses bad input with exit 2, one line, before touching the database") {
  struct Case {
    std::vector<std::string> args;
    const char* names;
  };
  const Case cases[] = {
      {{"cron"}, "missing action"},
      {{"cron", "frob"}, "'frob'"},
      {{"cron", "next"}, "--spec"},
      {{"cron", "next", "--spec", "0 0 30 2 *"}, "can never fire"},
      {{"cron", "next", "--spec", "@daily", "--count", "0"}, "--count 0"},
      {{"cron", "add", "--id", "x", "--spec", "* * *"}, "3 fields"},
      {{"cron", "add", "--id", "x", "--spec", "@daily", "--time-zone", "Mars/Base"}, "'Mars/Base'"},
      {{"cron", "add", "--id", "x", "--spec", "@daily", "--payload", "[1"}, "not JSON"},
      {{"cron", "add", "--id", "x", "--spec", "@daily", "--deadline", "soon"}, "'soon'"},
      {{"cron", "add", "--id", "x", "--spec", "@daily", "--window", "1 minute"}, "'1 minute'"},
      {{"cron", "add", "--id", "x", "--spec", "@daily", "--dst-repeated", "twice"},
       "dst_repeated: 'twice' is not a policy (use auto, first, last, both or none)"},
      {{"cron", "update", "--id", "x", "--dst-missing", "forward"},
       "dst_missing: 'forward' is not a policy (use auto, shift or skip)"},
      {{"cron", "next", "--spec", "@daily", "--dst-missing", "later"}, "dst_missing: 'later' is not a policy"},
      {{"cron", "add", "--id", "x", "--spec", "@daily", "--calendar", "desk", "--when-closed", "later"},
       "when_closed: 'later' is not a policy (use skip or move)"},
      {{"cron", "next", "--spec", "@daily", "--calendar", "desk"}, "--calendar only applies to cron add and update"},
      {{"cron", "add", "--id", "x", "--spec", "@daily", "--no-calendar"}, "--no-calendar only applies to cron update"},
  };
  for (const Case& c : cases) {
    INFO(Catch::rangeToString(c.args));
    // An unreachable database: every refusal happens before connecting.
    const ProcessResult r = run_prescient(c.args, {{"PRESCIENT_DATABASE_URL", "host=127.0.0.1 port=1"}});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains(c.names));
    CHECK(lines_of(r.err).size() == 1);
  }
}

TEST_CASE("cron add --file: one bad line writes nothing, exits 2 and names it; pause, resume, list pages") {
  const std::string url = create_migrated_database(60);
  const std::string path = std::filesystem::temp_directory_path() / ("prescient-cron-" + std::to_string(::getpid()));
  {
    std::ofstream file(path);
    file << R"({"id": "a", "spec": "@hourly"})" << "\n"
         << R"({"id": "b", "spec": "61 * * * *"})" << "\n"
         << "\n"
         << R"({"id": "c", "spec": "0 9 * * *", "time_zone": "Europe/Berlin", "deadline": "5m"})" << "\n"
         << R"({"id": "d", "spec": "*/15 * * * *", "payload": {"type": "quarter"}})" << "\n";
  }
  const ProcessResult refused = run_prescient(with_db({"cron", "add", "--file", path}, url));
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.err, Catch::Contains("line 2: invalid cron spec '61 * * * *': minute field"));
  CHECK_THAT(refused.err, Catch::Contains("1 invalid line(s)"));
  CHECK(json::parse(run_prescient(with_db({"cron", "list", "--json"}, url)).out).empty());

  const ProcessResult added = run_prescient(with_db({"cron", "add", "--file", path, "--skip-invalid", "--json"}, url));
  REQUIRE(added.exit_code == 0);
  CHECK(json::parse(added.out) == json{{"added", 3}, {"invalid", 1}, {"lines", 5}});
  // An id in use is a bad line like any other (prescient.cron_problems judges it): named, and nothing is added.
  const ProcessResult again = run_prescient(with_db({"cron", "add", "--file", path}, url));
  CHECK(again.exit_code == 2);
  CHECK_THAT(again.err, Catch::Contains("line 1: id: schedule 'a' exists already (update it instead)"));
  CHECK_THAT(again.err, Catch::Contains("line 5: id: schedule 'd' exists already (update it instead)"));
  CHECK_THAT(again.err, Catch::Contains("4 invalid line(s)"));
  const ProcessResult skipped = run_prescient(with_db({"cron", "add", "--file", path, "--skip-invalid", "--json"}, url));
  REQUIRE(skipped.exit_code == 0);
  CHECK(json::parse(skipped.out) == json{{"added", 0}, {"invalid", 4}, {"lines", 5}});
  std::filesystem::remove(path);

  // Pages by id, and filters.
  const json first = json::parse(run_prescient(with_db({"cron", "list", "--limit", "2", "--json"}, url)).out);
  REQUIRE(first.size() == 2);
  CHECK(first[1]["id"] == "c");
  const json rest = json::parse(run_prescient(with_db({"cron", "list", "--limit", "2", "--after", "c", "--json"}, url)).out);
  REQUIRE(rest.size() == 1);
  CHECK(rest[0]["id"] == "d");
  CHECK(run_prescient(with_db({"cron", "list", "--limit", "0"}, url)).exit_code == 2);

  const ProcessResult paused = run_prescient(with_db({"cron", "pause", "--id", "c", "--json"}, url));
  CHECK(json::parse(paused.out) == json{{"id", "c"}, {"status", "paused"}});
  const json only_paused = json::parse(run_prescient(with_db({"cron", "list", "--paused", "--json"}, url)).out);
  REQUIRE(only_paused.size() == 1);
  CHECK(only_paused[0]["state"] == "paused");
  CHECK(only_paused[0]["next_check_at"].is_null());
  CHECK(json::parse(run_prescient(with_db({"cron", "resume", "--id", "c", "--json"}, url)).out)["status"] == "resumed");
  CHECK(json::parse(run_prescient(with_db({"cron", "resume", "--id", "c", "--json"}, url)).out)["status"] == "not paused");
  CHECK(run_prescient(with_db({"cron", "pause", "--id", "nope"}, url)).exit_code == 3);

  // A job class: paused, it shows in stats with its pending checks; resumed, it is gone from there.
  CHECK(json::parse(run_prescient(with_db({"jobs", "pause", "cron", "--by", "ops", "--json"}, url)).out)["status"] ==
        "paused");
  const json stats = json::parse(run_prescient(with_db({"stats", "--json"}, url)).out);
  REQUIRE(stats["paused_classes"].size() == 1);
  CHECK(stats["paused_classes"][0]["job"] == "cron");
  CHECK(stats["paused_classes"][0]["pending"] == 3);
  CHECK(stats["paused_classes"][0]["paused_by"] == "ops");
  CHECK(json::parse(run_prescient(with_db({"jobs", "resume", "cron", "--json"}, url)).out)["status"] == "resumed");
  CHECK(json::parse(run_prescient(with_db({"stats", "--json"}, url)).out)["paused_classes"].empty());
  CHECK(run_prescient(with_db({"jobs", "pause"}, url)).exit_code == 2);
}

TEST_CASE("cron bounds, overlap, pause --note and backfill from the command line; bad values exit 2") {
  const std::string url = create_migrated_database(60);
  const ProcessResult add = run_prescient(with_db(
      {"cron", "add", "--id", "report", "--spec", "0 * * * *", "--job", "noop", "--overlap", "skip", "--start-at",
       "2026-01-01T00:00:00Z", "--end-at", "2099-01-01T00:00:00Z", "--max-runs", "3", "--json"},
      url));
  REQUIRE(add.exit_code == 0);
  const json added = json::parse(add.out);
  CHECK(added["overlap"] == "skip");
  CHECK(added["max_runs"] == 3);
  CHECK(added["run_count"] == 0);
  CHECK(added["end_at"] == "2099-01-01T00:00:00Z");

  const ProcessResult pause =
      run_prescient(with_db({"cron", "pause", "--id", "report", "--note", "finance asked to hold it"}, url));
  CHECK(pause.exit_code == 0);
  const ProcessResult show = run_prescient(with_db({"cron", "show", "--id", "report"}, url));
  CHECK_THAT(show.out, Catch::Contains("state paused since"));
  CHECK_THAT(show.out, Catch::Contains(": finance asked to hold it"));
  CHECK_THAT(show.out, Catch::Contains("overlap skip"));
  CHECK_THAT(show.out, Catch::Contains("bounds: from 2026-01-01T00:00:00Z to 2099-01-01T00:00:00Z, ran 0 of max_runs 3"));

  const ProcessResult backfill = run_prescient(with_db(
      {"cron", "backfill", "--id", "report", "--from", "2026-11-01T00:00:00Z", "--to", "2026-11-01T05:00:00Z", "--json"},
      url));
  REQUIRE(backfill.exit_code == 0);
  CHECK(json::parse(backfill.out)["check"].get<long long>() > 0);

  check_refused({
      {{"cron", "add", "--id", "x", "--spec", "@daily", "--max-runs", "0"},
       "max_runs: 0 is not a count of runs (1 to 2147483647)"},
      {{"cron", "add", "--id", "x", "--spec", "@daily", "--priority", "10"},
       "priority: the priority 10 is not one of 0 (first) to 9 (last)"},
      {{"cron", "add", "--id", "x", "--spec", "@daily", "--job", "noop", "--pause-after-failures", "0"},
       "pause_after_failures: 0 is not a count of failed occurrences (1 to 1000)"},
      {{"cron", "add", "--id", "x", "--spec", "@daily", "--pause-after-failures", "many"}, "'many'"},
      {{"cron", "add", "--id", "x", "--spec", "@daily", "--job", "noop", "--overlap", "queue"},
       "overlap: 'queue' is not a policy (use allow, skip, buffer_one or cancel_previous)"},
      {{"cron", "add", "--id", "x", "--spec", "@daily", "--overlap", "skip"},
       "overlap: skip is for schedules of a job class"},
      {{"cron", "add", "--id", "x", "--spec", "@daily", "--end-at", "2020-01-01T00:00:00Z"},
       "end_at: 2020-01-01T00:00:00Z is not after now"},
      {{"cron", "update", "--id", "report", "--max-runs", "0"}, "max_runs: 0 is not a count of runs (1 to 2147483647)"},
      {{"cron", "update", "--id", "report", "--job", "emit"},
       "overlap: skip is for schedules of a job class; emit publishes events, which do not overlap"},
      {{"cron", "add", "--id", "x", "--spec", "@daily", "--start-at", "tomorrow"}, "tomorrow"},
      {{"cron", "backfill", "--id", "report", "--from", "2026-11-02T00:00:00Z", "--to", "2026-11-01T00:00:00Z"},
       "to: 2026-11-01T00:00:00Z is before from 2026-11-02T00:00:00Z"},
      {{"cron", "backfill", "--id", "report", "--from", "2024-01-01T00:00:00Z", "--to", "2026-01-01T00:00:00Z"},
       "the range 2024-01-01T00:00:00Z to 2026-01-01T00:00:00Z is over a year (at most 366 days)"},
      {{"cron", "backfill", "--id", "report", "--from", "2026-11-01T00:00:00Z"}, "cron backfill needs --from TIME and --to TIME"},
      {{"cron", "resume", "--id", "report", "--note", "x"}, "--note only applies to cron pause"},
  }, url);
  const ProcessResult unknown = run_prescient(with_db(
      {"cron", "backfill", "--id", "nope", "--from", "2026-11-01T00:00:00Z", "--to", "2026-11-01T01:00:00Z"}, url));
  CHECK(unknown.exit_code == 3);  // not found, as for every command
  CHECK_THAT(unknown.err, Catch::Contains("no schedule 'nope'"));
  const ProcessResult list = run_prescient(with_db({"cron", "list", "--json"}, url));
  CHECK(json::parse(list.out).size() == 1);
  // One backfill: the refused ones wrote nothing.
  const ProcessResult pending = run_prescient(with_db({"list", "--json"}, url));
  CHECK(pending.out.find("cron-backfill:report:") != std::string::npos);
}

TEST_CASE("cron --dst-repeated and --dst-missing: next, add, show, list, update and the bulk file") {
  // Berlin's spring-forward: 02:30 does not exist on 2026-03-29; shifted, it fires at 03:30 CEST.
  const ProcessResult next = run_prescient({"cron", "next", "--spec", "30 2 * * *", "--time-zone", "Europe/Berlin",
                                            "--dst-missing", "shift", "--from", "2026-03-28T12:00:00Z", "--count", "1"});
  REQUIRE(next.exit_code == 0);
  CHECK(lines_of(next.out) == std::vector<std::string>{"2026-03-29T01:30:00Z  2026-03-29 03:30:00 CEST"});

  const std::string url = create_migrated_database(60);
  const ProcessResult add = run_prescient(with_db({"cron", "add", "--id", "night", "--spec", "30 2 * * *", "--time-zone",
                                                   "Europe/Berlin", "--dst-repeated", "last", "--dst-missing", "skip"},
                                                  url));
  REQUIRE(add.exit_code == 0);
  CHECK_THAT(add.out, Catch::Contains(", dst_repeated last, dst_missing skip"));
  const json show = json::parse(run_prescient(with_db({"cron", "show", "--id", "night", "--json"}, url)).out);
  CHECK(show["dst_repeated"] == "last");
  CHECK(show["dst_missing"] == "skip");
  const std::vector<std::string> list = lines_of(run_prescient(with_db({"cron", "list"}, url)).out);
  REQUIRE(list.size() == 2);
  CHECK_THAT(list[0], Catch::Contains("DST"));
  CHECK_THAT(list[1], Catch::Contains("last/skip"));

  REQUIRE(run_prescient(with_db({"cron", "update", "--id", "night", "--dst-missing", "shift"}, url)).exit_code == 0);
  const json updated = json::parse(run_prescient(with_db({"cron", "show", "--id", "night", "--json"}, url)).out);
  CHECK(updated["dst_repeated"] == "last");
  CHECK(updated["dst_missing"] == "shift");

  const std::string file = std::filesystem::temp_directory_path() / ("dst-" + std::to_string(getpid()) + ".jsonl");
  std::ofstream(file) << R"({"id": "a", "spec": "*/30 * * * *", "dst_repeated": "none"})" << "\n"
                      << R"({"id": "b", "spec": "@daily", "dst_missing": "sometimes"})" << "\n";
  const ProcessResult bad = run_prescient(with_db({"cron", "add", "--file", file}, url));
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Catch::Contains("line 2") && Catch::Contains("dst_missing: 'sometimes' is not a policy"));
  std::ofstream(file) << R"({"id": "a", "spec": "*/30 * * * *", "dst_repeated": "none"})" << "\n";
  REQUIRE(run_prescient(with_db({"cron", "add", "--file", file}, url)).exit_code == 0);
  std::filesystem::remove(file);
  CHECK(json::parse(run_prescient(with_db({"cron", "show", "--id", "a", "--json"}, url)).out)["dst_repeated"] == "none");
}

TEST_CASE("cron --calendar and --when-closed: add, show, list --json and update --no-calendar") {
  const std::string url = create_migrated_database(60);
  REQUIRE(run_prescient(with_db({"calendar", "add", "desk", "--zone", "Europe/Berlin", "--file", "-"}, url), {},
                        R"({"hours": {"mon": ["09:00-17:00"], "tue": ["09:00-17:00"]}})")
              .exit_code == 0);
  const ProcessResult unknown =
      run_prescient(with_db({"cron", "add", "--id", "m", "--spec", "30 18 * * *", "--calendar", "nope"}, url));
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.err == "prescient: calendar: no calendar named 'nope' (prescient calendar list)\n");
  const ProcessResult add = run_prescient(with_db({"cron", "add", "--id", "m", "--spec", "30 18 * * *", "--time-zone",
                                                   "Europe/Berlin", "--calendar", "desk", "--when-closed", "move"},
                                                  url));
  REQUIRE(add.exit_code == 0);
  CHECK_THAT(add.out, Catch::Contains(", bound to calendar desk (closed: move)"));
  const json show = json::parse(run_prescient(with_db({"cron", "show", "--id", "m", "--json"}, url)).out);
  CHECK(show["calendar"] == "desk");
  CHECK(show["when_closed"] == "move");
  // Each evening's 18:30 fires at the next opening: Monday's and Tuesday's mornings only.
  for (const json& firing : show["next_firings"]) CHECK(firing.get<std::string>().ends_with("T08:00:00Z"));
  REQUIRE(run_prescient(with_db({"cron", "update", "--id", "m", "--no-calendar"}, url)).exit_code == 0);
  const json unbound = json::parse(run_prescient(with_db({"cron", "show", "--id", "m", "--json"}, url)).out);
  CHECK(unbound["calendar"].is_null());
  CHECK(unbound["when_closed"] == "skip");
}
