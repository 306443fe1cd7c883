#include <catch2/catch.hpp>
#include <soci/postgresql/soci-postgresql.h>
#include <soci/soci.h>

#include <exception>
#include <map>
#include <set>
#include <thread>

#include "builtin_jobs.hpp"
#include "prescient/errors.hpp"
#include "prescient/schedules.hpp"
#include "prescient/slot_runner.hpp"
#include "prescient/checks.hpp"
#include "prescient/settings.hpp"
#include "prescient/slot_grid.hpp"
#include "prescient/duration.hpp"
#include "prescient/time_text.hpp"
#include "schedule_fixture.hpp"
#include "test_database.hpp"

using namespace prescient;
using namespace prescient::jobs;
using namespace std::chrono_literals;
using prescient::testing::connect_to;
using prescient::testing::count_of;
using prescient::testing::create_migrated_database;

using prescient::testing::ScheduleFixture;
using prescient::testing::unix_id;

TEST_CASE("@every 1h fires at t+1h, t+2h with ids <id>-<unix>; a late run does not shift the series") {
  ScheduleFixture f;
  const ScheduleDefinition s = f.schedules.add({.id = "hourly", .spec = "@every 1h", .payload = {{"type", "tick"}}});
  CHECK(s.version == 1);
  CHECK(format_time(s.anchor_at) == "2026-11-21T10:05:30Z");
  CHECK(f.pending_at("hourly") == "2026-11-21T11:06:00Z");  // 11:05:30 rounded up to the grid
  CHECK(f.fire("2026-11-21T11:06:00Z").events == 1);
  CHECK(f.events("hourly") == std::vector<std::string>{unix_id("hourly", "2026-11-21T11:05:30Z")});
  CHECK(f.pending_at("hourly") == "2026-11-21T12:06:00Z");
  // The runner was down: the 12:06 slot is run 10 minutes late, by a sweep.
  CHECK(f.sweep_at("2026-11-21T12:16:00Z").events == 1);
  CHECK(f.pending_at("hourly") == "2026-11-21T13:06:00Z");  // still on the series, not 13:16
  CHECK(f.fire("2026-11-21T13:06:00Z").events == 1);
  CHECK(f.events("hourly") == std::vector<std::string>{unix_id("hourly", "2026-11-21T11:05:30Z"),
                                                       unix_id("hourly", "2026-11-21T12:05:30Z"),
                                                       unix_id("hourly", "2026-11-21T13:05:30Z")});
  std::string type;
  *f.db << "SELECT DISTINCT type FROM prescient.event", soci::into(type);
  CHECK(type == "tick");
  // Re-running a slot emits nothing twice.
  f.fire("2026-11-21T13:06:00Z");
  CHECK(f.events("hourly").size() == 3);
}

TEST_CASE("cron trigger fires once with an id of its own, and the next regular occurrence still fires on time") {
  ScheduleFixture f;
  f.schedules.add({.id = "hourly", .spec = "0 * * * *", .payload = {{"type", "report"}}});
  const std::string micros = std::to_string(to_unix_micros(parse_time("2026-11-21T10:05:30Z")));
  const std::string occurrence = f.schedules.trigger("hourly", "ops");
  CHECK(occurrence == "hourly-trigger-" + micros);
  f.fire("2026-11-21T10:06:00Z");
  CHECK(f.events("hourly") == std::vector<std::string>{occurrence});
  CHECK(f.pending_at("hourly") == "2026-11-21T11:00:00Z");
  f.fire("2026-11-21T11:00:00Z");
  CHECK(f.events("hourly") == std::vector<std::string>{occurrence, unix_id("hourly", "2026-11-21T11:00:00Z")});

  // A schedule of a class: a check of its own, with the schedule's priority, due at the next boundary.
  f.schedules.add({.id = "nightly", .spec = "0 3 * * *", .job = "noop", .priority = 1});
  const std::string key = f.schedules.trigger("nightly", "ops");
  CHECK(key == "cron:nightly:trigger-" + std::to_string(to_unix_micros(parse_time("2026-11-21T11:00:00Z"))));
  f.fire("2026-11-21T11:01:00Z");
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job WHERE job = 'noop' AND priority = 1"
                        " AND job_key = '" + key + "'") == 1);
  CHECK(f.pending_at("nightly") == "2026-11-22T03:00:00Z");
  CHECK_THROWS_AS(f.schedules.trigger("nope", "ops"), NotFound);
}

namespace {

// Fails the first payload.fail_first runs of each schedule's occurrences (by the entity key: the schedule's
// id), then succeeds; one attempt each.
class Flaky final : public JobExec {
 public:
  explicit Flaky(std::map<std::string, int>& runs) : runs_(runs) {}
  JobPolicy policy() const override { return {.max_attempts = 1}; }
  JobResult run(const Check& check, JobContext&) override {
    if (++runs_[check.entity_key] <= check.payload.value("fail_first", 0)) {
      throw std::runtime_error("run " + std::to_string(runs_[check.entity_key]) + " failed");
    }
    return {};
  }

 private:
  std::map<std::string, int>& runs_;
};

}  // namespace

TEST_CASE("pause after failures: three failing occurrences pause the schedule; two and a success do not") {
  ScheduleFixture f;
  std::map<std::string, int> runs;
  f.registry.add("flaky", [&runs] { return std::make_unique<Flaky>(runs); });
  *f.db << "SELECT prescient.job_class_add('flaky')";
  f.schedules.add({.id = "failing", .spec = "* * * * *", .job = "flaky", .payload = {{"fail_first", 1000}},
                   .pause_after_failures = 3});
  f.schedules.add({.id = "recovering", .spec = "* * * * *", .job = "flaky", .payload = {{"fail_first", 2}},
                   .pause_after_failures = 3});
  // Each minute fires an occurrence, whose check runs at the next minute.
  for (const char* at : {"2026-11-21T10:06:00Z", "2026-11-21T10:07:00Z", "2026-11-21T10:08:00Z",
                         "2026-11-21T10:09:00Z", "2026-11-21T10:10:00Z"}) {
    f.fire(at);
  }
  const ScheduleDefinition failing = f.schedules.show("failing");
  CHECK(failing.paused_at);
  CHECK(failing.pause_note == "paused after 3 failed occurrences in a row (pause_after_failures 3)");
  CHECK(failing.failed_in_a_row == 3);
  CHECK(failing.last_failure == "run 3 failed");
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.event WHERE type = 'prescient.schedule_paused'"
                        " AND source = 'failing' AND payload->>'last_error' = 'run 3 failed'") == 1);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job WHERE job_key = 'cron:failing'") == 0);

  const ScheduleDefinition recovering = f.schedules.show("recovering");
  CHECK_FALSE(recovering.paused_at);
  CHECK(recovering.failed_in_a_row == 0);
  CHECK(runs["recovering"] >= 3);

  // A resume starts the count again.
  CHECK(f.schedules.resume("failing", "ops"));
  CHECK(f.schedules.show("failing").failed_in_a_row == 0);
  CHECK_FALSE(f.schedules.show("failing").paused_at);

  CHECK_THROWS_WITH(f.schedules.add({.id = "bad", .spec = "@daily", .job = "flaky", .pause_after_failures = 0}),
                    Catch::Contains("pause_after_failures: 0 is not a count of failed occurrences (1 to 1000)"));
}

TEST_CASE("pause after failures counts the occurrences workers settle too") {
  ScheduleFixture f;
  *f.db << "SELECT prescient.job_class_add('mailer', true)";
  *f.db << "SELECT prescient.set_job_policy('mailer', p_max_attempts => 1)";
  *f.db << "UPDATE prescient.settings SET workers_may_pin_clock = true";  // the worker's calls below pin the clock
  f.schedules.add({.id = "mails", .spec = "* * * * *", .job = "mailer", .pause_after_failures = 2});
  // Each minute fires an occurrence; a worker takes the one due and fails it.
  for (const char* at : {"2026-11-21T10:06:00Z", "2026-11-21T10:07:00Z", "2026-11-21T10:08:00Z"}) {
    f.fire(at);
    const std::string now = at;
    long long id = 0, token = 0;
    soci::indicator none = soci::i_null;
    *f.db << "SELECT id, lease_token FROM prescient.worker_take('w', '{mailer}', 1, 30, :at)", soci::use(now),
        soci::into(id, none), soci::into(token);
    if (none != soci::i_ok) continue;  // the first minute's occurrence is due at the next
    *f.db << "SELECT count(*) FROM prescient.worker_fail('w', ARRAY[:id]::bigint[], ARRAY[:t]::bigint[],"
             " ARRAY['smtp down'], :at)",
        soci::use(id), soci::use(token), soci::use(now);
  }
  const ScheduleDefinition mails = f.schedules.show("mails");
  CHECK(mails.paused_at);
  CHECK(mails.failed_in_a_row == 2);
  CHECK(mails.last_failure == "smtp down");
}

TEST_CASE("several occurrences in one slot each get their own event") {
  ScheduleFixture f;
  f.clock.set(parse_time("2026-11-21T10:00:00Z"));
  f.schedules.add({.id = "fast", .spec = "@every 20s"});
  CHECK(f.pending_at("fast") == "2026-11-21T10:01:00Z");
  CHECK(f.fire("2026-11-21T10:01:00Z").events == 3);
  CHECK(f.events("fast") == std::vector<std::string>{unix_id("fast", "2026-11-21T10:00:20Z"),
                                                     unix_id("fast", "2026-11-21T10:00:40Z"),
                                                     unix_id("fast", "2026-11-21T10:01:00Z")});
}

TEST_CASE("catch-up after a 5 h outage: one fires the latest missed, all every one, none none") {
  ScheduleFixture f;
  f.clock.set(parse_time("2026-11-21T10:30:00Z"));
  f.schedules.add({.id = "one", .spec = "0 * * * *", .catch_up = "one"});
  f.schedules.add({.id = "all", .spec = "0 * * * *", .catch_up = "all"});
  f.schedules.add({.id = "none", .spec = "0 * * * *", .catch_up = "none"});
  f.schedules.add({.id = "late", .spec = "0 * * * *", .deadline = 10min, .catch_up = "all"});
  // Nothing ran from 11:00 to 16:00; the daemon comes back at 16:00:30 and sweeps.
  f.sweep_at("2026-11-21T16:00:30Z");
  CHECK(f.events("one") == std::vector<std::string>{unix_id("one", "2026-11-21T15:00:00Z"),
                                                    unix_id("one", "2026-11-21T16:00:00Z")});
  CHECK(f.events("all").size() == 6);  // 11:00 .. 16:00
  CHECK(f.events("all").front() == unix_id("all", "2026-11-21T11:00:00Z"));
  CHECK(f.events("none") == std::vector<std::string>{unix_id("none", "2026-11-21T16:00:00Z")});
  // With a 10-minute deadline, the five missed occurrences are recorded as deadline_missed, not emitted.
  CHECK(f.events("late") == std::vector<std::string>{unix_id("late", "2026-11-21T16:00:00Z")});
  const auto missed = Checks(*f.db).history({.outcome = Outcome::deadline_missed}, true);
  REQUIRE(missed.size() == 5);
  CHECK(format_time(missed[0].last_check_at) == "2026-11-21T11:00:00Z");
  CHECK_THAT(*missed[0].last_error, Catch::Contains("beyond its deadline of 10m"));
  for (const char* id : {"one", "all", "none", "late"}) CHECK(f.pending_at(id) == "2026-11-21T17:00:00Z");
}

TEST_CASE("update takes effect from the next occurrence, with no stale firing; remove cancels") {
  ScheduleFixture f;
  f.clock.set(parse_time("2026-11-21T10:40:00Z"));
  f.schedules.add({.id = "s", .spec = "0 * * * *"});
  CHECK(f.pending_at("s") == "2026-11-21T11:00:00Z");
  f.clock.set(parse_time("2026-11-21T10:45:00Z"));
  const ScheduleDefinition updated = f.schedules.update("s", {.spec = "30 * * * *", .payload = nlohmann::json{{"v", 2}}});
  CHECK(updated.version == 2);
  CHECK(f.pending_at("s") == "2026-11-21T11:30:00Z");
  CHECK(Checks(*f.db).pending({.job = "cron"}).size() == 1);  // replaced in place, no second check
  CHECK(f.fire("2026-11-21T11:00:00Z").claimed == 0);        // the old spec's time: nothing
  CHECK(f.fire("2026-11-21T11:30:00Z").events == 1);
  std::string payload;
  *f.db << "SELECT payload::text FROM prescient.event", soci::into(payload);
  CHECK(nlohmann::json::parse(payload) == nlohmann::json{{"v", 2}});

  f.schedules.remove("s", "ops");
  CHECK_THROWS_AS(f.schedules.show("s"), NotFound);
  CHECK(Checks(*f.db).pending({.job = "cron"}).empty());
  const auto cancelled = Checks(*f.db).history({.job_key = "cron:s"});
  REQUIRE(cancelled.size() == 1);
  CHECK(cancelled[0].outcome == Outcome::cancelled);
  CHECK(cancelled[0].finished_by == "ops");
  CHECK(f.fire("2026-11-21T12:30:00Z").claimed == 0);
  CHECK_THROWS_AS(f.schedules.remove("s", "ops"), NotFound);
  CHECK_THROWS_AS(f.schedules.update("s", {.spec = "@daily"}), NotFound);
}

TEST_CASE("an update that waits on a concurrent one keeps that one's change: no lost update") {
  ScheduleFixture f;
  f.schedules.add({.id = "s", .spec = "0 * * * *"});
  // Another session holds the row, as a concurrent update would, and changes the payload.
  const auto other = connect_to(f.url);
  soci::transaction holder(*other);
  *other << "UPDATE prescient.cron_schedule SET payload = '{\"v\": 1}', version = version + 1 WHERE id = 's'";

  std::exception_ptr failure;
  std::thread updater([&] {
    try {
      const auto own = connect_to(f.url);
      Schedules(*own, f.clock).update("s", {.spec = "30 * * * *"});
    } catch (...) {
      failure = std::current_exception();
    }
  });
  int waiting = 0;
  for (int polls = 0; waiting == 0 && polls < 1000; ++polls) {
    *f.db << "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
        soci::into(waiting);
    if (waiting == 0) std::this_thread::sleep_for(10ms);
  }
  holder.commit();
  updater.join();
  REQUIRE(waiting == 1);
  if (failure) std::rethrow_exception(failure);

  const ScheduleDefinition stored = f.schedules.show("s");
  CHECK(stored.spec == "30 * * * *");
  CHECK(stored.payload == nlohmann::json{{"v", 1}});
  CHECK(stored.version == 3);
}

TEST_CASE("a schedule of another class gets a check of that class per occurrence") {
  ScheduleFixture f;
  f.clock.set(parse_time("2026-11-21T10:40:00Z"));
  f.schedules.add({.id = "nightly", .spec = "0 11 * * *", .job = "noop"});
  f.fire("2026-11-21T11:00:00Z");
  const auto made = Checks(*f.db).pending({.job = "noop"});
  REQUIRE(made.size() == 1);
  CHECK(made[0].job_key == "cron:nightly:" + std::to_string(to_unix_micros(parse_time("2026-11-21T11:00:00Z")) / 1000000));
  CHECK(format_time(made[0].next_check_at) == "2026-11-21T11:01:00Z");
  CHECK(f.fire("2026-11-21T11:01:00Z").done == 1);
}

TEST_CASE("bad schedules are refused and nothing is written") {
  ScheduleFixture f;
  f.schedules.add({.id = "taken", .spec = "@daily"});
  CHECK_THROWS_WITH(f.schedules.add({.id = "taken", .spec = "@daily"}), Catch::Contains("exists already"));
  CHECK_THROWS_WITH(f.schedules.add({.id = "x", .spec = "61 * * * *"}), Catch::Contains("minute field"));
  CHECK_THROWS_WITH(f.schedules.add({.id = "x", .spec = "@daily", .time_zone = "Nowhere/Town"}),
                    Catch::Contains("'Nowhere/Town'"));
  CHECK_THROWS_WITH(f.schedules.add({.id = "x", .spec = "@daily", .catch_up = "some"}), Catch::Contains("'some'"));
  CHECK_THROWS_WITH(f.schedules.add({.id = "x", .spec = "@daily", .job = "nope"}), Catch::Contains("'nope'"));
  CHECK_THROWS_WITH(f.schedules.add({.id = "x", .spec = "@at 2020-01-01T00:00:00Z"}), Catch::Contains("never fires"));
  CHECK_THROWS_WITH(f.schedules.add({.id = "", .spec = "@daily"}), Catch::Contains("id is empty"));
  CHECK(f.schedules.list().size() == 1);
  CHECK(Checks(*f.db).pending({}).size() == 1);
}

TEST_CASE("schedule changes join the application's open transaction: they commit or roll back with it") {
  ScheduleFixture f;
  using prescient::testing::count_of;
  *f.db << "CREATE TABLE app_orders (id int)";
  // Rolled back with the application's transaction: no schedule, no pending check.
  *f.db << "BEGIN";
  f.schedules.add({.id = "in-tx", .spec = "@every 1h"});
  *f.db << "ROLLBACK";
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.cron_schedule WHERE id = 'in-tx'") == 0);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job WHERE job_key = 'cron:in-tx'") == 0);
  // A refused change undoes only itself: the application's own work in that transaction still commits.
  *f.db << "BEGIN";
  *f.db << "INSERT INTO app_orders VALUES (42)";
  CHECK_THROWS_AS(f.schedules.update("no-such-schedule", {.spec = "@every 2h"}), NotFound);
  f.schedules.add({.id = "kept", .spec = "@every 1h"});
  *f.db << "COMMIT";
  CHECK(count_of(*f.db, "SELECT count(*) FROM app_orders") == 1);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job WHERE job_key = 'cron:kept'") == 1);
  // Without an open transaction each change commits on its own, as before.
  f.schedules.remove("kept", "test");
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.cron_schedule") == 0);
}

TEST_CASE("schedules with a window fire each occurrence at their place in it, and keep that place") {
  ScheduleFixture f;
  std::vector<ScheduleDefinition> daily;
  for (int i = 0; i < 20; ++i) {
    daily.push_back({.id = "d" + std::to_string(i), .spec = "0 11 * * *", .payload = {{"type", "tick"}},
                     .window = 10min});
  }
  f.schedules.add_many(daily);
  // Each schedule's check at 11:00 plus (its id mod 10) minutes: two in each of the window's ten slots.
  std::map<std::string, int> per_slot;
  for (const auto& d : daily) ++per_slot[f.pending_at(d.id)];
  std::map<std::string, int> expected;
  for (int minute = 0; minute < 10; ++minute) expected["2026-11-21T11:0" + std::to_string(minute) + ":00Z"] = 2;
  CHECK(per_slot == expected);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job WHERE job = 'cron'"
                        " AND next_check_at <> '2026-11-21T11:00:00Z'::timestamptz + (id % 10) * interval '1 minute'") ==
        0);

  // Each slot emits its two, and each event is the 11:00 occurrence's, with its usual id.
  f.fire("2026-11-21T10:59:00Z");
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.event") == 0);
  for (int minute = 0; minute < 10; ++minute) {
    CHECK(f.fire(("2026-11-21T11:0" + std::to_string(minute) + ":00Z").c_str()).events == 2);
  }
  for (const auto& d : daily) CHECK(f.events(d.id) == std::vector<std::string>{unix_id(d.id.c_str(), "2026-11-21T11:00:00Z")});
  // The next day, the same place.
  per_slot.clear();
  for (const auto& d : daily) ++per_slot[f.pending_at(d.id)];
  expected.clear();
  for (int minute = 0; minute < 10; ++minute) expected["2026-11-22T11:0" + std::to_string(minute) + ":00Z"] = 2;
  CHECK(per_slot == expected);
  CHECK(f.schedules.show("d0").window == 10min);
}

TEST_CASE("a schedule's deadline counts from its place in the window") {
  ScheduleFixture f;
  // Schedules until one lands at least 5 minutes into its 10-minute window.
  std::string id;
  std::chrono::minutes place{0};
  for (int i = 0; place < 5min; ++i) {
    if (!id.empty()) f.schedules.remove(id, "test");  // only the one that lands late enough stays
    id = "late" + std::to_string(i);
    f.schedules.add({.id = id, .spec = "0 11 * * *", .payload = {{"type", "tick"}}, .deadline = 2min,
                     .window = 10min});
    place = std::chrono::duration_cast<std::chrono::minutes>(*f.schedules.show(id).next_check_at -
                                                             parse_time("2026-11-21T11:00:00Z"));
  }
  // Fired a minute after its place: within the deadline, though more than two minutes after 11:00.
  const std::string one_late = format_time(parse_time("2026-11-21T11:00:00Z") + place + 1min);
  CHECK(f.sweep_at(one_late.c_str()).events == 1);
  CHECK(f.events(id).size() == 1);
  // The next day, fired three minutes after its place: beyond it, recorded as deadline_missed.
  const std::string three_late = format_time(parse_time("2026-11-22T11:00:00Z") + place + 3min);
  CHECK(f.sweep_at(three_late.c_str()).events == 0);
  const auto missed = Checks(*f.db).history({.outcome = Outcome::deadline_missed}, true);
  REQUIRE(missed.size() == 1);
  CHECK_THAT(*missed[0].last_error, Catch::Contains("came 3m late, beyond its deadline of 2m"));
}

TEST_CASE("a schedule's window below 1s or over the horizon is refused; update changes it") {
  ScheduleFixture f;
  CHECK_THROWS_WITH(f.schedules.add({.id = "w", .spec = "@daily", .window = 0s}),
                    "window_seconds: 0 is not a window (at least 1)");
  CHECK_THROWS_WITH(f.schedules.add({.id = "w", .spec = "@daily", .window = 400 * 24h}),
                    Catch::Contains("window_seconds: 34560000 is over the horizon"));
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.cron_schedule") == 0);
  f.schedules.add({.id = "w", .spec = "0 11 * * *"});
  CHECK(f.pending_at("w") == "2026-11-21T11:00:00Z");
  const ScheduleDefinition updated = f.schedules.update("w", {.window = 1h});
  CHECK(updated.window == 1h);
  std::int64_t check_id = 0;
  *f.db << "SELECT id FROM prescient.future_job WHERE job_key = 'cron:w'", soci::into(check_id);
  CHECK(f.pending_at("w") == format_time(parse_time("2026-11-21T11:00:00Z") + (check_id % 60) * 1min));
}

TEST_CASE("a schedule with a jitter fires each occurrence at its own offset within it, never early") {
  ScheduleFixture f;
  f.schedules.add({.id = "digest", .spec = "0 * * * *", .payload = {{"type", "tick"}}, .jitter = 10min});
  CHECK(f.schedules.show("digest").jitter == 10min);
  const SlotGrid grid(60s);
  std::set<std::string> offsets;
  for (TimePoint hour = parse_time("2026-11-21T11:00:00Z"); hour <= parse_time("2026-11-22T10:00:00Z"); hour += 1h) {
    const TimePoint due = hour + grid.jitter_offset("digest", hour, 10min);
    offsets.insert(format_duration(std::chrono::duration_cast<std::chrono::seconds>(due - hour)));
    // Nothing before its offset; at it, the occurrence's event, with its usual id and time.
    if (due > hour) CHECK(f.fire(format_time(due - 1min).c_str()).events == 0);
    CHECK(f.fire(format_time(due).c_str()).events == 1);
    CHECK(f.events("digest").back() == unix_id("digest", format_time(hour).c_str()));
  }
  CHECK(f.events("digest").size() == 24);
  CHECK(offsets.size() > 3);  // 24 occurrences at offsets of their own, not one place
  CHECK_THROWS_WITH(f.schedules.add({.id = "both", .spec = "@daily", .window = 10min, .jitter = 5min}),
                    Catch::Contains("a window or a jitter, not both"));
}

TEST_CASE("DST policy: stored, carried by the check, fired by the runner; a bad value refused with nothing written") {
  ScheduleFixture f;
  // Europe/Berlin, 2026-03-29: 02:00 CET -> 03:00 CEST; 02:30 does not exist.
  f.clock.set(parse_time("2026-03-28T12:00:00Z"));
  f.schedules.add({.id = "shifted", .spec = "30 2 * * *", .time_zone = "Europe/Berlin", .dst_missing = "shift"});
  f.schedules.add({.id = "cron-rule", .spec = "30 2 * * *", .time_zone = "Europe/Berlin"});
  *f.db << "SELECT prescient.cron_add('skipped', '30 2 * * *', 'Europe/Berlin',"
           " p_now => '2026-03-28T12:00:00Z', p_options => '{\"dst_missing\": \"skip\", \"dst_repeated\": \"last\"}')";
  const ScheduleDefinition shifted = f.schedules.show("shifted");
  CHECK(shifted.dst_missing == "shift");
  CHECK(shifted.dst_repeated == "auto");
  CHECK(to_json(shifted)["dst_missing"] == "shift");
  CHECK(f.schedules.show("skipped").dst_repeated == "last");
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job WHERE job_key = 'cron:shifted'"
                        " AND payload->>'dst_missing' = 'shift' AND NOT payload ? 'dst_repeated'") == 1);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job WHERE job_key = 'cron:cron-rule'"
                        " AND NOT payload ? 'dst_missing'") == 1);
  // The gap's length later on the new clock (03:30 CEST), its end (03:00 CEST), or the next day.
  CHECK(format_time(f.schedules.detail("shifted").next_firings.front()) == "2026-03-29T01:30:00Z");
  CHECK(format_time(f.schedules.detail("cron-rule").next_firings.front()) == "2026-03-29T01:00:00Z");
  CHECK(format_time(f.schedules.detail("skipped").next_firings.front()) == "2026-03-30T00:30:00Z");
  // The runner, armed from SQL without a first occurrence, finds it by the carried policy and fires there.
  f.fire("2026-03-28T12:01:00Z");
  CHECK(f.pending_at("skipped") == "2026-03-30T00:30:00Z");
  f.fire("2026-03-29T01:00:00Z");
  f.fire("2026-03-29T01:30:00Z");
  CHECK(f.events("cron-rule") == std::vector<std::string>{unix_id("cron-rule", "2026-03-29T01:00:00Z")});
  CHECK(f.events("shifted") == std::vector<std::string>{unix_id("shifted", "2026-03-29T01:30:00Z")});
  CHECK(f.events("skipped").empty());

  // An update changes it from the next occurrence; a null sets it back to auto.
  f.schedules.update("shifted", {.dst_repeated = "both"});
  CHECK(f.schedules.show("shifted").dst_repeated == "both");
  *f.db << "SELECT prescient.cron_update('shifted', '{\"dst_missing\": null}', p_now => '2026-03-29T02:00:00Z')";
  CHECK(f.schedules.show("shifted").dst_missing == "auto");
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job WHERE job_key = 'cron:shifted'"
                        " AND payload->>'dst_repeated' = 'both' AND NOT payload ? 'dst_missing'") == 1);

  // Refused with PR400, one line naming the value, and nothing written.
  const auto refusal = [&](const std::string& sql) -> std::string {
    try {
      *f.db << "SAVEPOINT refusal";
      *f.db << sql;
      *f.db << "RELEASE SAVEPOINT refusal";
      return "accepted";
    } catch (const soci::postgresql_soci_error& e) {
      *f.db << "ROLLBACK TO SAVEPOINT refusal";
      return e.sqlstate() + " " + e.what();
    }
  };
  *f.db << "BEGIN";
  CHECK_THAT(refusal("SELECT prescient.cron_add('bad', '@daily', p_options => '{\"dst_repeated\": \"twice\"}')"),
             Catch::StartsWith("PR400") &&
                 Catch::Contains("dst_repeated: 'twice' is not a policy (use auto, first, last, both or none)"));
  CHECK_THAT(refusal("SELECT prescient.cron_add('bad', '@daily', p_options => '{\"dst_missing\": \"forward\"}')"),
             Catch::StartsWith("PR400") && Catch::Contains("dst_missing: 'forward' is not a policy (use auto, shift or skip)"));
  CHECK_THAT(refusal("SELECT prescient.cron_add('bad', '@daily', p_options => '{\"dst_missing\": 1}')"),
             Catch::StartsWith("PR400") && Catch::Contains("dst_missing: must be a string"));
  CHECK_THAT(refusal("SELECT prescient.cron_add_many('[{\"id\": \"bad\", \"spec\": \"@daily\", \"dst_repeated\": \"2x\"}]')"),
             Catch::StartsWith("PR400") && Catch::Contains("item 1: dst_repeated: '2x' is not a policy"));
  CHECK_THAT(refusal("SELECT prescient.cron_update('cron-rule', '{\"dst_missing\": \"later\"}')"),
             Catch::StartsWith("PR400") && Catch::Contains("dst_missing: 'later' is not a policy"));
  *f.db << "COMMIT";
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.cron_schedule WHERE id = 'bad'") == 0);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job WHERE job_key = 'cron:bad'") == 0);
  CHECK(f.schedules.show("cron-rule").version == 1);
  // The C++ client refuses in the same words before asking.
  CHECK_THROWS_WITH(f.schedules.add({.id = "bad", .spec = "@daily", .dst_repeated = "twice"}),
                    "dst_repeated: 'twice' is not a policy (use auto, first, last, both or none)");
}
