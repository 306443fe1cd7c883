// Schedules through the SQL API (sql/functions/045_cron.sql), as an application in any language uses it,
// and the guarantees of a check that carries its definition: updates racing with firings, definitions
// only the runner can judge, pause and resume, DST nights.
#include <catch2/catch.hpp>
#include <soci/soci.h>

#include <barrier>
#include <thread>

#include "builtin_jobs.hpp"
#include "login_role.hpp"
#include "prescient/checks.hpp"
#include "prescient/errors.hpp"
#include "prescient/migrations.hpp"
#include "prescient/schedules.hpp"
#include "prescient/slot_runner.hpp"
#include "prescient/time_text.hpp"
#include "schedule_fixture.hpp"
#include "test_database.hpp"

using namespace prescient;
using namespace prescient::jobs;
using namespace std::chrono_literals;
using prescient::testing::as_user;
using prescient::testing::connect_to;
using prescient::testing::count_of;
using prescient::testing::create_migrated_database;
using prescient::testing::denied;
using prescient::testing::Login;
using prescient::testing::unix_id;

namespace {

// A 1-minute grid, unless told another.
struct CronSqlFixture {
  std::string url;
  std::unique_ptr<soci::session> owner;
  ManualClock clock{parse_time("2026-11-21T10:00:30Z")};
  Registry registry;

  explicit CronSqlFixture(int slot_seconds = 60) : url(create_migrated_database(slot_seconds)), owner(connect_to(url)) {
    register_builtin_jobs(registry);
  }

  SlotReport fire(const char* at) { return fire(parse_time(at)); }
  SlotReport fire(TimePoint at) {
    clock.set(at);
    SlotRunner runner({.database_url = url, .runner_id = "r"}, registry, clock);
    return runner.run_slot(runner.settings().grid().floor(at));
  }
  SlotReport sweep(TimePoint at) {
    clock.set(at);
    SlotRunner runner({.database_url = url, .runner_id = "r"}, registry, clock);
    return runner.sweep(runner.settings().grid().floor(at), SweepMode::run);
  }
  Schedules schedules() { return Schedules(*owner, clock); }
  std::vector<std::string> events(const std::string& source) {
    std::vector<std::string> ids(10000);
    std::vector<soci::indicator> nulls(10000);
    *owner << "SELECT id FROM prescient.event WHERE source = :s ORDER BY occurred_at", soci::use(source),
        soci::into(ids, nulls);
    return ids;
  }
  std::string role_suffix() {
    std::string name;
    *owner << "SELECT current_database()", soci::into(name);
    return name;
  }
};

std::string error_of(soci::session& db, const std::string& sql) {
  try {
    db << sql;
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("the SQL API used by prescient_client alone: add, bulk add, update, pause, resume, remove") {
  CronSqlFixture f;
  Login login(*f.owner, "client_" + f.role_suffix(), "prescient_client");
  auto db = connect_to(as_user(f.url, login.name));
  int version = 0, added = 0, changed_count = 0;
  *db << "SELECT prescient.cron_add('hourly', '0 * * * *', p_payload => '{\"type\": \"tick\"}',"
         " p_now => '2026-11-21T10:00:30Z')", soci::into(version);
  CHECK(version == 1);
  *db << "SELECT prescient.cron_add_many('[{\"id\": \"a\", \"spec\": \"@every 1h\"},"
         " {\"id\": \"b\", \"spec\": \"*/15 * * * *\", \"time_zone\": \"Europe/Berlin\", \"catch_up\": \"all\"}]',"
         " p_now => '2026-11-21T10:00:30Z')", soci::into(added);
  CHECK(added == 2);
  // Armed at the next boundary, where the runner finds each first occurrence without firing anything.
  CHECK(count_of(*f.owner, "SELECT count(*) FROM prescient.future_job WHERE job = 'cron'"
                           " AND next_check_at = '2026-11-21T10:01:00Z'") == 3);
  CHECK(f.fire("2026-11-21T10:01:00Z").events == 0);
  CHECK(format_time(*f.schedules().show("hourly").next_check_at) == "2026-11-21T11:00:00Z");
  CHECK(format_time(*f.schedules().show("a").next_check_at) == "2026-11-21T11:01:00Z");  // 11:00:30 on the grid
  CHECK(format_time(*f.schedules().show("b").next_check_at) == "2026-11-21T10:15:00Z");

  // Versioned update: the expected version must be the current one.
  *db << "SELECT prescient.cron_update('hourly', '{\"payload\": {\"type\": \"tock\"}}', 1,"
         " p_now => '2026-11-21T10:30:00Z')", soci::into(version);
  CHECK(version == 2);
  CHECK_THAT(error_of(*db, "SELECT prescient.cron_update('hourly', '{\"spec\": \"@daily\"}', 1)"),
             Catch::Contains("schedule 'hourly' is at version 2, not 1"));
  CHECK(f.schedules().show("hourly").spec == "0 * * * *");
  *db << R"(SELECT prescient.cron_update_many('[{"id": "b", "catch_up": "one"}, {"id": "a", "spec": "@every 2h"}]',)"
         " p_now => '2026-11-21T10:30:00Z')", soci::into(changed_count);
  CHECK(changed_count == 2);
  CHECK(f.schedules().show("a").version == 2);

  // Paused from 10:40: its check is cancelled, nothing fires at 11:00 or 12:00.
  int changed = 0;
  *db << "SELECT prescient.cron_pause('hourly', p_now => '2026-11-21T10:40:00Z')::int", soci::into(changed);
  CHECK(changed == 1);
  *db << "SELECT prescient.cron_pause('hourly', p_now => '2026-11-21T10:41:00Z')::int", soci::into(changed);
  CHECK(changed == 0);
  CHECK(f.schedules().show("hourly").paused_at.has_value());
  CHECK_FALSE(f.schedules().show("hourly").next_check_at.has_value());
  f.fire("2026-11-21T11:00:00Z");
  f.fire("2026-11-21T12:00:00Z");
  CHECK(f.events("hourly").empty());
  // Resumed at 13:30: catch-up `one` fires the latest occurrence missed while paused, once.
  *db << "SELECT prescient.cron_resume('hourly', p_now => '2026-11-21T13:30:00Z')::int", soci::into(changed);
  CHECK(changed == 1);
  f.fire("2026-11-21T13:31:00Z");
  CHECK(f.events("hourly") == std::vector<std::string>{unix_id("hourly", "2026-11-21T13:00:00Z")});
  std::string payload;
  *f.owner << "SELECT payload::text FROM prescient.event WHERE source = 'hourly'", soci::into(payload);
  CHECK(nlohmann::json::parse(payload) == nlohmann::json{{"type", "tock"}});
  CHECK(format_time(*f.schedules().show("hourly").next_check_at) == "2026-11-21T14:00:00Z");

  *db << "SELECT prescient.cron_remove('a', p_now => '2026-11-21T13:32:00Z')";
  CHECK_THROWS_AS(f.schedules().show("a"), NotFound);
  CHECK_THAT(error_of(*db, "SELECT prescient.cron_remove('a')"), Catch::Contains("no schedule 'a'"));

  // What it cannot do: write the definitions or the checks by hand, or fire.
  CHECK(denied(*db, "INSERT INTO prescient.cron_schedule (id, spec, anchor_at, created_at, updated_at)"
                    " VALUES ('x', '@daily', now(), now(), now())"));
  CHECK(denied(*db, "UPDATE prescient.cron_schedule SET spec = '@every 1s'"));
  CHECK(denied(*db, "DELETE FROM prescient.cron_schedule"));
  CHECK(denied(*db, "UPDATE prescient.future_job SET next_check_at = now() WHERE job = 'cron'"));
  CHECK(denied(*db, "SELECT id FROM prescient.future_job WHERE job = 'cron' FOR UPDATE SKIP LOCKED"));
}

TEST_CASE("schedules added from SQL by a transaction that outlasts the next boundary are not overdue") {
  // A 1-second grid. The adding transaction began at 10:00:00.9 (its now(), the default p_now) and commits
  // after the runner fired 10:00:01: checks due then would be caught up by the sweep after the next slot
  // as overdue, though no occurrence of theirs was due.
  CronSqlFixture f(1);
  CHECK(f.fire("2026-11-21T10:00:01Z").claimed == 0);
  *f.owner << "SELECT prescient.cron_add_arrays(array_agg('s' || i), array_agg('*/5 * * * *'::text),"
              "                                 p_now => '2026-11-21T10:00:00.9Z')"
              "  FROM generate_series(1, 1000) i";
  *f.owner << "SELECT prescient.cron_add('hourly', '@hourly', p_now => '2026-11-21T10:00:00.9Z')";
  // A spec without a seconds field fires on whole minutes: the runner looks for the first occurrence at
  // the next one, which the transaction did not outlast.
  CHECK(count_of(*f.owner, "SELECT count(*) FROM prescient.future_job"
                           " WHERE job = 'cron' AND next_check_at = '2026-11-21T10:01:00Z'") == 1001);
  CHECK(f.fire("2026-11-21T10:00:02Z").claimed == 0);
  CHECK(f.sweep(parse_time("2026-11-21T10:00:02.5Z")).claimed == 0);  // the daemon's sweep after the slot
  CHECK(f.fire("2026-11-21T10:01:00Z").claimed == 1001);              // the look-ups: nothing fires yet
  CHECK(count_of(*f.owner, "SELECT count(*) FROM prescient.event") == 0);
  CHECK(count_of(*f.owner, "SELECT count(*) FROM prescient.future_job"
                           " WHERE job = 'cron' AND next_check_at = '2026-11-21T10:05:00Z'") == 1000);
  CHECK(f.fire("2026-11-21T10:05:00Z").claimed == 1000);  // the first occurrence, on time
  CHECK(count_of(*f.owner, "SELECT count(*) FROM prescient.event") == 1000);
  CHECK(f.sweep(parse_time("2026-11-21T10:05:00.5Z")).claimed == 0);

  // A spec that may fire at any second (6 fields, @every, @at) is still looked at the next boundary.
  *f.owner << "SELECT prescient.cron_add('every', '@every 10s', p_now => '2026-11-21T10:05:00.2Z')";
  *f.owner << "SELECT prescient.cron_add('seconds', '*/10 * * * * *', p_now => '2026-11-21T10:05:00.2Z')";
  CHECK(count_of(*f.owner, "SELECT count(*) FROM prescient.future_job"
                           " WHERE job = 'cron' AND next_check_at = '2026-11-21T10:05:01Z'") == 2);
}

TEST_CASE("bulk add from SQL is all or nothing; the bad item is named by position and field") {
  CronSqlFixture f;
  struct Case {
    const char* items;
    const char* error;
  };
  const Case cases[] = {
      {R"([{"id": "ok", "spec": "@daily"}, {"id": "bad", "spec": "@daily", "time_zone": "Mars/Olympus"}])",
       "item 2: time_zone: unknown time zone 'Mars/Olympus'"},
      {R"([{"id": "x", "spec": "@daily", "timezone": "UTC"}])", "item 1: timezone: unknown field"},
      {R"([{"id": "x", "spec": "every day"}])", "item 1: spec: 'every day' is not a cron spec"},
      {R"([{"id": "x", "spec": "@daily"}, {"id": "y"}])", "item 2: spec: the cron spec is empty"},
      {R"([{"id": "x", "spec": "@daily", "payload": [1]}])", "item 1: payload: must be a JSON object"},
      {R"([{"id": "x", "spec": "@daily", "catch_up": "some"}])", "item 1: catch_up: 'some' is not a policy"},
      {R"([{"id": "x", "spec": "@daily", "deadline_seconds": 1.5}])", "item 1: deadline_seconds: must be a whole"},
      {R"([{"id": "x", "spec": "@daily", "job": "cron"}])", "item 1: job: a schedule cannot run the cron class"},
      {R"([{"id": "x", "spec": "@daily"}, {"id": "y", "spec": "@daily", "window_seconds": 0}])",
       "item 2: window_seconds: 0 is not a window"},
      {R"([{"id": "x", "spec": "@daily", "window_seconds": 999999999}])",
       "item 1: window_seconds: 999999999 is over the horizon"},
      {R"([{"id": "x", "spec": "@daily", "window_seconds": "10m"}])", "item 1: window_seconds: must be a whole"},
      {R"([{"id": "x", "spec": "@daily", "jitter_seconds": 0}])", "item 1: jitter_seconds: 0 is not a jitter"},
      {R"([{"id": "x", "spec": "@daily", "jitter_seconds": 300, "window_seconds": 600}])",
       "item 1: jitter_seconds: a schedule has a window or a jitter, not both"},
      {R"([{"id": "x", "spec": "@daily"}, {"id": "x", "spec": "@hourly"}])", "item 2: id: 'x' is given twice"},
      {R"([{"id": "", "spec": "@daily"}])", "item 1: id: the schedule id is empty"},
      {R"({"id": "x"})", "the items must be a JSON array"},
  };
  for (const Case& c : cases) {
    INFO(c.items);
    CHECK_THAT(error_of(*f.owner, std::string("SELECT prescient.cron_add_many('") + c.items + "')"),
               Catch::Contains(c.error));
  }
  CHECK(count_of(*f.owner, "SELECT count(*) FROM prescient.cron_schedule") == 0);
  CHECK(count_of(*f.owner, "SELECT count(*) FROM prescient.future_job") == 0);
  // An id in use: PR409, and the other items of the call are not written either.
  *f.owner << "SELECT prescient.cron_add('taken', '@daily')";
  CHECK_THAT(error_of(*f.owner, R"(SELECT prescient.cron_add_many('[{"id": "new", "spec": "@daily"},)"
                                R"( {"id": "taken", "spec": "@daily"}]'))"),
             Catch::Contains("item 2: id: schedule 'taken' exists already"));
  CHECK(count_of(*f.owner, "SELECT count(*) FROM prescient.cron_schedule") == 1);
  // An update's changes are judged field by field the same way.
  CHECK_THAT(error_of(*f.owner, R"(SELECT prescient.cron_update('taken', '{"timezone": "UTC"}'))"),
             Catch::Contains("timezone: unknown field"));
  CHECK_THAT(error_of(*f.owner, R"(SELECT prescient.cron_update('taken', '{"deadline_seconds": 1.5}'))"),
             Catch::Contains("deadline_seconds: must be a whole number"));
  CHECK_THAT(error_of(*f.owner, R"(SELECT prescient.cron_update('taken', '{"window_seconds": -600}'))"),
             Catch::Contains("window_seconds: -600 is not a window"));
  CHECK_THAT(error_of(*f.owner, R"(SELECT prescient.cron_update('taken', '{"id": "other"}'))"),
             Catch::Contains("id: a schedule keeps its id"));
  CHECK(f.schedules().show("taken").version == 1);
}

TEST_CASE("bulk update is all or nothing, from SQL and from C++; the refused item is named") {
  CronSqlFixture f;
  auto schedules = f.schedules();
  schedules.add({.id = "a", .spec = "@hourly"});
  schedules.add({.id = "b", .spec = "@daily", .payload = {{"n", 1}}});
  struct Case {
    const char* items;
    const char* error;
  };
  const Case cases[] = {
      {R"([{"id": "a", "spec": "@daily"}, {"id": "nope", "spec": "@daily"}])", "item 2: no schedule 'nope'"},
      {R"([{"id": "a", "spec": "@daily"}, {"id": "b", "expected_version": 7, "spec": "@daily"}])",
       "item 2: schedule 'b' is at version 1, not 7"},
      {R"([{"id": "a", "spec": "@daily"}, {"id": "b", "time_zone": "Mars/Olympus"}])",
       "item 2: time_zone: unknown time zone 'Mars/Olympus'"},
      {R"([{"id": "a", "spec": "@daily"}, {"id": "b", "timezone": "UTC"}])", "item 2: timezone: unknown field"},
      {R"([{"id": "a", "expected_version": 1.5, "spec": "@daily"}])", "item 1: expected_version: must be a whole"},
      {R"([{"spec": "@daily"}])", "item 1: id: the schedule id is required"},
      {R"([{"id": "a", "spec": "@daily"}, 3])", "item 2: must be a JSON object"},
      {R"({"id": "a"})", "the items must be a JSON array"},
  };
  for (const Case& c : cases) {
    INFO(c.items);
    CHECK_THAT(error_of(*f.owner, std::string("SELECT prescient.cron_update_many('") + c.items + "')"),
               Catch::Contains(c.error));
  }
  // Nothing of the refused calls stayed: item 1 of each was undone with the rest.
  CHECK(schedules.show("a").version == 1);
  CHECK(schedules.show("a").spec == "@hourly");
  // The error keeps its SQLSTATE: a stale version is a conflict, an unknown id is not found.
  CHECK_THROWS_AS(schedules.update_many(std::vector<ScheduleUpdate>{{.id = "a", .changes = {.spec = "@daily"}},
                                                                     {.id = "gone", .changes = {.spec = "@daily"}}}),
                  NotFound);
  try {
    schedules.update_many(std::vector<ScheduleUpdate>{{.id = "a", .changes = {.spec = "@daily"}},
                                                      {.id = "b", .changes = {.spec = "61 * * * *"}}});
    FAIL("a bad spec was accepted");
  } catch (const InvalidInput& e) {
    CHECK_THAT(e.what(), Catch::StartsWith("item 2: ") && Catch::Contains("61"));
  }
  CHECK(schedules.show("a").version == 1);

  int updated = 0;
  *f.owner << R"(SELECT prescient.cron_update_many('[{"id": "a", "expected_version": 1, "spec": "*/30 * * * *"},)"
              R"( {"id": "b", "payload": {"n": 2}}]', p_now => '2026-11-21T10:00:30Z'))",
      soci::into(updated);
  CHECK(updated == 2);
  CHECK(schedules.show("a").version == 2);
  CHECK(schedules.show("b").payload == nlohmann::json{{"n", 2}});
  CHECK(schedules.update_many(std::vector<ScheduleUpdate>{{.id = "a", .changes = {.spec = "@hourly"}, .expected_version = 2},
                                                          {.id = "b", .changes = {.catch_up = "all"}}}) == 2);
  CHECK(schedules.show("a").spec == "@hourly");
  CHECK(schedules.show("b").catch_up == "all");
  CHECK(format_time(*schedules.show("a").next_check_at) == "2026-11-21T11:00:00Z");
}

TEST_CASE("what only the runner can judge marks the schedule invalid, once, visibly; an update repairs it") {
  CronSqlFixture f;
  // Both pass SQL's checks: the field is out of range, the time is in the past.
  *f.owner << "SELECT prescient.cron_add('bad-minute', '61 * * * *', p_now => '2026-11-21T10:00:30Z')";
  *f.owner << "SELECT prescient.cron_add('past', '@at 2020-01-01T00:00:00Z', p_now => '2026-11-21T10:00:30Z')";
  *f.owner << "SELECT prescient.cron_add('fine', '@hourly', p_now => '2026-11-21T10:00:30Z')";
  const SlotReport r = f.fire("2026-11-21T10:01:00Z");
  CHECK(r.claimed == 3);
  CHECK(r.failed == 0);
  const auto invalid = f.schedules().list({.invalid = true});
  REQUIRE(invalid.size() == 2);
  CHECK(invalid[0].id == "bad-minute");
  CHECK_THAT(invalid[0].invalid_reason.value_or(""), Catch::Contains("minute field: 61"));
  CHECK(invalid[1].id == "past");
  CHECK_THAT(invalid[1].invalid_reason.value_or(""), Catch::Contains("never fires"));
  CHECK_FALSE(invalid[0].next_check_at.has_value());  // no check left to fail again and again
  CHECK(f.fire("2026-11-21T10:02:00Z").claimed == 0);
  CHECK(f.schedules().list({.invalid = false}).size() == 3);

  f.clock.set(parse_time("2026-11-21T10:03:00Z"));
  f.schedules().update("bad-minute", {.spec = "*/5 * * * *"});
  const ScheduleDefinition repaired = f.schedules().show("bad-minute");
  CHECK_FALSE(repaired.invalid_reason.has_value());
  CHECK(format_time(*repaired.next_check_at) == "2026-11-21T10:05:00Z");
  CHECK(f.fire("2026-11-21T10:05:00Z").events == 1);
}

TEST_CASE("an update racing with the firing of the old version: each occurrence fires exactly once") {
  CronSqlFixture f;
  f.clock.set(parse_time("2026-11-21T10:00:00Z"));
  f.schedules().add({.id = "race", .spec = "@every 1m", .payload = {{"v", 0}}});
  const TimePoint base = parse_time("2026-11-21T10:00:00Z");
  constexpr int kRounds = 40;
  for (int round = 1; round <= kRounds; ++round) {
    const TimePoint slot = base + std::chrono::minutes{round};
    f.clock.set(slot + 500ms);
    std::barrier start(2);
    std::exception_ptr failure;
    std::thread updater([&] {
      try {
        const auto own = connect_to(f.url);
        Schedules schedules(*own, f.clock);
        start.arrive_and_wait();
        // Both orders: the update first, or the runner's claim (odd rounds give it a head start).
        std::this_thread::sleep_for(std::chrono::milliseconds{round % 2 == 1 ? 1 + round % 7 : 0});
        schedules.update("race", {.payload = nlohmann::json{{"v", round}}});
      } catch (...) {
        failure = std::current_exception();
      }
    });
    SlotRunner runner({.database_url = f.url, .runner_id = "r"}, f.registry, f.clock);
    start.arrive_and_wait();
    runner.run_slot(slot);
    updater.join();
    if (failure) std::rethrow_exception(failure);
    // A check the update held while the slot was drained stays due at its slot: the daemon's next claim
    // of that slot (or its sweep at the next boundary) takes it.
    runner.run_slot(slot);

    INFO("round " << round);
    const std::string id = "race-" + std::to_string(to_unix_micros(slot) / 1000000);
    REQUIRE(count_of(*f.owner, "SELECT count(*) FROM prescient.event WHERE id = '" + id + "'") == 1);
    std::string payload;
    *f.owner << "SELECT payload::text FROM prescient.event WHERE id = :id", soci::use(id), soci::into(payload);
    const int fired = nlohmann::json::parse(payload).at("v").get<int>();
    CHECK((fired == round - 1 || fired == round));  // the old version or the new one, whichever came first
    // The check carries the current version: the next occurrence cannot fire a stale one.
    const ScheduleDefinition now = f.schedules().show("race");
    CHECK(now.version == round + 1);
    CHECK(count_of(*f.owner, "SELECT count(*) FROM prescient.future_job WHERE job_key = 'cron:race'"
                             " AND (payload->>'version')::int = " + std::to_string(now.version)) == 1);
  }
  CHECK(f.events("race").size() == kRounds);
}

TEST_CASE("a */15 schedule fires through the fall-back night in New York at both 01:xx hours") {
  CronSqlFixture f;
  f.clock.set(parse_time("2026-11-01T05:00:00Z"));  // 01:00 EDT
  f.schedules().add({.id = "q", .spec = "*/15 * * * *", .time_zone = "America/New_York"});
  std::vector<std::string> fired;
  for (TimePoint t = parse_time("2026-11-01T05:01:00Z"); t <= parse_time("2026-11-01T07:15:00Z"); t += 1min) {
    if (f.fire(t).events > 0) fired.push_back(format_time(t));
  }
  const std::vector<std::string> expected{
      "2026-11-01T05:15:00Z", "2026-11-01T05:30:00Z", "2026-11-01T05:45:00Z",   // 01:15-01:45 EDT
      "2026-11-01T06:00:00Z", "2026-11-01T06:15:00Z", "2026-11-01T06:30:00Z",   // 01:00-01:30 EST
      "2026-11-01T06:45:00Z", "2026-11-01T07:00:00Z", "2026-11-01T07:15:00Z"};  // 01:45 EST, 02:00, 02:15
  CHECK(fired == expected);
  CHECK(f.events("q").size() == expected.size());
}

TEST_CASE("migration 0015 moves a schedule's definition and place into its pending check, which fires on") {
  CronSqlFixture f;
  // Rewound to before 0015: what an earlier prescient left (a cron check carrying only the schedule's id
  // and version; the last occurrence in the table).
  *f.owner << "DROP TABLE prescient.paused_job";
  *f.owner << "ALTER TABLE prescient.cron_schedule DROP COLUMN paused_at CASCADE, DROP COLUMN paused_by CASCADE,"
              " DROP COLUMN invalid_reason CASCADE";
  *f.owner << "DROP INDEX prescient.cron_schedule_job";
  *f.owner << "DELETE FROM prescient.role_grant WHERE added_by = 15";
  *f.owner << "DELETE FROM prescient.schema_migrations WHERE version = 15";
  // 0025, 0028 and 0029 rewrite a grant 0015 adds, so they are rewound too and run again after it.
  *f.owner << "ALTER TABLE prescient.cron_schedule DROP COLUMN window_seconds CASCADE,"
              " DROP COLUMN jitter_seconds CASCADE, DROP COLUMN overlap CASCADE, DROP COLUMN start_at CASCADE,"
              " DROP COLUMN end_at CASCADE, DROP COLUMN max_runs CASCADE, DROP COLUMN run_count CASCADE,"
              " DROP COLUMN ended_at CASCADE, DROP COLUMN ended_reason CASCADE, DROP COLUMN pause_note CASCADE";
  *f.owner << "DELETE FROM prescient.role_grant WHERE added_by = 29";
  *f.owner << "DELETE FROM prescient.schema_migrations WHERE version IN (25, 28, 29)";
  *f.owner << "DELETE FROM prescient.schema_functions";
  *f.owner << "INSERT INTO prescient.cron_schedule (id, spec, time_zone, payload, version, anchor_at, created_at,"
              " updated_at, last_occurrence_at) VALUES ('legacy', '0 * * * *', 'Europe/Berlin', '{\"type\": \"t\"}', 3,"
              " '2026-11-20T00:00:00Z', '2026-11-20T00:00:00Z', '2026-11-20T00:00:00Z', '2026-11-21T09:00:00Z')";
  *f.owner << "INSERT INTO prescient.future_job (job, entity_name, entity_key, job_key, payload, first_check_at,"
              " next_check_at, enqueued_on, enqueued_by) VALUES ('cron', 'schedule', 'legacy', 'cron:legacy',"
              " '{\"schedule\": \"legacy\", \"version\": 3}', '2026-11-20T01:00:00Z', '2026-11-21T10:00:00Z',"
              " '2026-11-20T00:00:00Z', 'cron')";

  const MigrationReport report = migrate(*f.owner, std::nullopt);
  REQUIRE(report.applied.size() == 4);
  CHECK(report.applied[0] == "0015_cron_at_drain_speed.sql");
  CHECK(report.applied[1] == "0025_schedule_window.sql");
  CHECK(report.applied[2] == "0028_schedule_jitter.sql");
  CHECK(report.applied[3] == "0029_schedule_policies.sql");
  std::string payload;
  *f.owner << "SELECT payload::text FROM prescient.future_job WHERE job_key = 'cron:legacy'", soci::into(payload);
  const nlohmann::json carried = nlohmann::json::parse(payload);
  CHECK(carried["spec"] == "0 * * * *");
  CHECK(carried["time_zone"] == "Europe/Berlin");
  CHECK(carried["version"] == 3);
  CHECK(carried["payload"] == nlohmann::json{{"type", "t"}});
  CHECK(carried["last_us"] == to_unix_micros(parse_time("2026-11-21T09:00:00Z")));
  // It fires its next occurrence once, from where it was, and nothing before.
  CHECK(f.fire("2026-11-21T10:00:00Z").events == 1);
  CHECK(f.events("legacy") == std::vector<std::string>{unix_id("legacy", "2026-11-21T10:00:00Z")});
  CHECK(format_time(*f.schedules().show("legacy").next_check_at) == "2026-11-21T11:00:00Z");
}
