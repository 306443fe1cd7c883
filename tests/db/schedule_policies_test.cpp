// What a schedule does besides firing (docs/schedules.md): bounds and max_runs, overlap policies for the
// checks its occurrences make, backfill, and a note on a pause. Hours of schedule on a manual clock.
#include <catch2/catch.hpp>
#include <soci/soci.h>

#include <set>

#include "login_role.hpp"
#include "prescient/checks.hpp"
#include "prescient/errors.hpp"
#include "schedule_fixture.hpp"

using namespace prescient;
using prescient::testing::as_user;
using prescient::testing::connect_to;
using prescient::testing::count_of;
using prescient::testing::Login;
using prescient::testing::unix_id;

namespace {

using SchedulePoliciesFixture = prescient::testing::ScheduleFixture;

// The occurrence checks of schedule `id` still pending, by key.
std::set<std::string> pending_occurrences(soci::session& db, const std::string& id) {
  std::vector<std::string> keys(1000);
  db << "SELECT job_key FROM prescient.future_job WHERE entity_key = :id AND job <> 'cron' ORDER BY job_key",
      soci::use(id), soci::into(keys);
  return {keys.begin(), keys.end()};
}

std::string key_of(const char* schedule, const char* time) {
  return "cron:" + std::string(schedule) + ":" + std::to_string(to_unix_micros(parse_time(time)) / 1000000);
}

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("max_runs 3: three occurrences fire, then the schedule ends by itself and is kept as ended") {
  SchedulePoliciesFixture f;
  f.schedules.add({.id = "thrice", .spec = "0 * * * *", .payload = {{"type", "t"}}, .max_runs = 3});
  for (const char* at : {"2026-11-21T11:00:10Z", "2026-11-21T12:00:10Z", "2026-11-21T13:00:10Z"}) f.fire(at);
  CHECK(f.events("thrice") == std::vector<std::string>{unix_id("thrice", "2026-11-21T11:00:00Z"),
                                                        unix_id("thrice", "2026-11-21T12:00:00Z"),
                                                        unix_id("thrice", "2026-11-21T13:00:00Z")});
  ScheduleDefinition d = f.schedules.show("thrice");
  CHECK(state_of(d) == "ended");
  CHECK(d.run_count == 3);
  CHECK(d.ended_reason == std::optional<std::string>("it ran its max_runs (3)"));
  CHECK(format_time(*d.ended_at) == "2026-11-21T13:00:10Z");
  CHECK(format_time(*d.last_occurrence_at) == "2026-11-21T13:00:00Z");
  CHECK_FALSE(d.next_check_at);
  f.fire("2026-11-21T14:00:10Z");
  CHECK(f.events("thrice").size() == 3);
  // Raising max_runs arms it again from where it ended: two more, then it ends again.
  f.clock.set(parse_time("2026-11-21T13:30:00Z"));
  f.schedules.update("thrice", {.max_runs = 5});
  CHECK(state_of(f.schedules.show("thrice")) == "active");
  for (const char* at : {"2026-11-21T14:00:10Z", "2026-11-21T15:00:10Z", "2026-11-21T16:00:10Z"}) f.fire(at);
  CHECK(f.events("thrice").size() == 5);
  d = f.schedules.show("thrice");
  CHECK(state_of(d) == "ended");
  CHECK(d.run_count == 5);
}

TEST_CASE("max_runs counts across a pause, and catch-up all fires no more than what is left") {
  SchedulePoliciesFixture f;
  f.schedules.add({.id = "four", .spec = "0 * * * *", .catch_up = "all", .max_runs = 4});
  f.fire("2026-11-21T11:00:10Z");
  f.schedules.pause("four", "ops");
  CHECK(f.schedules.show("four").run_count == 1);
  f.clock.set(parse_time("2026-11-21T16:30:00Z"));
  f.schedules.resume("four", "ops");
  // Five occurrences fell due while paused; three are left.
  f.fire("2026-11-21T16:31:00Z");
  CHECK(f.events("four").size() == 4);
  CHECK(state_of(f.schedules.show("four")) == "ended");
}

TEST_CASE("start_at and end_at: only occurrences between them fire (both included), then it ends") {
  SchedulePoliciesFixture f;
  const ScheduleDefinition d = f.schedules.add({.id = "window",
                                                .spec = "0 * * * *",
                                                .start_at = parse_time("2026-11-21T12:00:00Z"),
                                                .end_at = parse_time("2026-11-21T14:00:00Z")});
  CHECK(f.pending_at("window") == "2026-11-21T12:00:00Z");  // it sleeps until start_at
  for (const char* at : {"2026-11-21T11:00:10Z", "2026-11-21T12:00:10Z", "2026-11-21T13:00:10Z",
                         "2026-11-21T14:00:10Z", "2026-11-21T15:00:10Z"}) {
    f.fire(at);
  }
  CHECK(f.events("window") == std::vector<std::string>{unix_id("window", "2026-11-21T12:00:00Z"),
                                                        unix_id("window", "2026-11-21T13:00:00Z"),
                                                        unix_id("window", "2026-11-21T14:00:00Z")});
  const ScheduleDefinition ended = f.schedules.show("window");
  CHECK(state_of(ended) == "ended");
  CHECK(ended.ended_reason == std::optional<std::string>("no occurrence left up to its end_at 2026-11-21T14:00:00Z"));
}

TEST_CASE("overlap policies: three occurrences of a class whose checks never got to run") {
  // The occurrence checks land in the slot after their occurrence's, which no runner runs here: each
  // stays pending, as a slow class's would.
  struct Row {
    const char* policy;
    std::size_t pending, skipped, cancelled;
    bool grouped;
  };
  const Row row = GENERATE(Row{"allow", 3, 0, 0, false}, Row{"skip", 1, 2, 0, false},
                           Row{"buffer_one", 2, 1, 0, true}, Row{"cancel_previous", 1, 0, 2, true});
  CAPTURE(row.policy);
  SchedulePoliciesFixture f;
  f.schedules.add({.id = "slow", .spec = "0 * * * *", .job = "noop", .overlap = row.policy});
  for (const char* at : {"2026-11-21T11:00:10Z", "2026-11-21T12:00:10Z", "2026-11-21T13:00:10Z"}) f.fire(at);
  const auto pending = pending_occurrences(*f.db, "slow");
  CHECK(pending.size() == row.pending);
  // skip keeps the earliest, buffer_one the earliest two; cancel_previous the latest.
  const std::string at11 = key_of("slow", "2026-11-21T11:00:00Z"), at12 = key_of("slow", "2026-11-21T12:00:00Z"),
                    at13 = key_of("slow", "2026-11-21T13:00:00Z");
  if (row.policy == std::string("skip")) CHECK(pending == std::set<std::string>{at11});
  if (row.policy == std::string("buffer_one")) CHECK(pending == std::set<std::string>{at11, at12});
  if (row.policy == std::string("cancel_previous")) CHECK(pending == std::set<std::string>{at13});
  Checks checks(*f.db);
  const auto skipped = checks.history({.outcome = Outcome::overlap_skipped}, true);
  CHECK(skipped.size() == row.skipped);
  for (const auto& h : skipped) {
    CHECK(h.job == "noop");
    CHECK(h.last_error->find(std::string("(overlap: ") + row.policy + ")") != std::string::npos);
  }
  const auto cancelled = checks.history({.outcome = Outcome::cancelled}, true);
  CHECK(cancelled.size() == row.cancelled);
  for (const auto& h : cancelled) CHECK(h.last_error->find("overlap: cancel_previous") != std::string::npos);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job WHERE group_key = 'cron:slow'") ==
        static_cast<long long>(row.grouped ? row.pending : 0));
}

TEST_CASE("overlap skip: once the earlier check has settled, the next occurrence runs") {
  SchedulePoliciesFixture f;
  f.schedules.add({.id = "s", .spec = "0 * * * *", .job = "noop", .overlap = "skip"});
  f.fire("2026-11-21T11:00:10Z");
  f.fire("2026-11-21T11:01:00Z");  // the 11:00 occurrence's check runs and settles
  f.fire("2026-11-21T12:00:10Z");
  CHECK(pending_occurrences(*f.db, "s") == std::set<std::string>{key_of("s", "2026-11-21T12:00:00Z")});
  CHECK(Checks(*f.db).history({.outcome = Outcome::overlap_skipped}, true).empty());
}

TEST_CASE("overlap cancel_previous leaves a running check alone: the new one waits in the group") {
  SchedulePoliciesFixture f;
  f.schedules.add({.id = "c", .spec = "0 * * * *", .job = "noop", .overlap = "cancel_previous"});
  f.fire("2026-11-21T11:00:10Z");
  // A runner holds the 11:00 occurrence's check (its claim's row lock) while 12:00 fires.
  auto running = connect_to(f.url);
  soci::transaction claim(*running);
  const std::string held = key_of("c", "2026-11-21T11:00:00Z");
  *running << "SELECT 1 FROM prescient.future_job WHERE job_key = :k FOR UPDATE", soci::use(held);
  f.fire("2026-11-21T12:00:10Z");
  claim.rollback();
  CHECK(pending_occurrences(*f.db, "c") == std::set<std::string>{held, key_of("c", "2026-11-21T12:00:00Z")});
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job WHERE group_key = 'cron:c'") == 2);
  CHECK(Checks(*f.db).history({.outcome = Outcome::cancelled}, true).empty());
}

TEST_CASE("backfill over a range that partly ran fires each missing occurrence once, with live event ids") {
  SchedulePoliciesFixture f;
  f.schedules.add({.id = "b", .spec = "0 * * * *", .catch_up = "none"});
  f.fire("2026-11-21T11:00:10Z");
  f.fire("2026-11-21T12:00:10Z");
  f.clock.set(parse_time("2026-11-21T12:20:00Z"));
  const auto backfill = [&] {
    return f.schedules.backfill("b", parse_time("2026-11-21T08:00:00Z"), parse_time("2026-11-21T12:00:00Z"), "ops");
  };
  backfill();
  backfill();  // asked twice while pending: one backfill
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job WHERE job_key LIKE 'cron-backfill:b:%'") == 1);
  f.fire("2026-11-21T12:21:10Z");  // a backfill is due at the next boundary
  const std::vector<std::string> all{
      unix_id("b", "2026-11-21T08:00:00Z"), unix_id("b", "2026-11-21T09:00:00Z"), unix_id("b", "2026-11-21T10:00:00Z"),
      unix_id("b", "2026-11-21T11:00:00Z"), unix_id("b", "2026-11-21T12:00:00Z")};
  CHECK(f.events("b") == all);
  // Again, after it settled: nothing twice. And the live schedule goes on at 13:00.
  backfill();
  f.fire("2026-11-21T12:22:10Z");
  f.fire("2026-11-21T13:00:10Z");
  CHECK(f.events("b").size() == all.size() + 1);
}

TEST_CASE("backfill of a class: a settled occurrence is not run again, and a paused schedule moves past it") {
  SchedulePoliciesFixture f;
  f.schedules.add({.id = "k", .spec = "0 * * * *", .job = "noop"});
  f.fire("2026-11-21T11:00:10Z");
  f.fire("2026-11-21T11:01:00Z");  // the 11:00 check runs and settles: done
  f.schedules.pause("k", "ops", "upstream down");
  f.clock.set(parse_time("2026-11-21T15:30:00Z"));
  f.schedules.backfill("k", parse_time("2026-11-21T11:00:00Z"), parse_time("2026-11-21T14:00:00Z"), "ops");
  f.fire("2026-11-21T15:31:10Z");
  CHECK(pending_occurrences(*f.db, "k") ==
        std::set<std::string>{key_of("k", "2026-11-21T12:00:00Z"), key_of("k", "2026-11-21T13:00:00Z"),
                              key_of("k", "2026-11-21T14:00:00Z")});
  CHECK(format_time(*f.schedules.show("k").last_occurrence_at) == "2026-11-21T14:00:00Z");
  // Resumed, catch-up one fires 15:00, not the backfilled 14:00 again.
  f.schedules.resume("k", "ops");
  // The same slot runs the backfilled checks (11:00 is done already, so 12:00 to 14:00).
  f.fire("2026-11-21T15:32:10Z");
  CHECK(pending_occurrences(*f.db, "k") == std::set<std::string>{key_of("k", "2026-11-21T15:00:00Z")});
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.job_history WHERE job = 'noop' AND outcome = 'done'") == 4);
}

TEST_CASE("pause with a note: shown while paused, kept in the cancelled check's history, cleared on resume") {
  SchedulePoliciesFixture f;
  f.schedules.add({.id = "n", .spec = "0 * * * *"});
  CHECK(f.schedules.pause("n", "ops", "billing migration, back on Monday"));
  CHECK(f.schedules.show("n").pause_note == std::optional<std::string>("billing migration, back on Monday"));
  std::string note;
  *f.db << "SELECT payload->>'pause_note' FROM prescient.job_history WHERE job_key = 'cron:n' AND outcome = 'cancelled'",
      soci::into(note);
  CHECK(note == "billing migration, back on Monday");
  f.schedules.resume("n", "ops");
  CHECK_FALSE(f.schedules.show("n").pause_note);
}

TEST_CASE("bad bounds, overlap and backfill ranges are refused naming the value, and nothing is written") {
  SchedulePoliciesFixture f;
  // SQL's words (cron_array_problems), as every door gives them: the three-door test in client_test.cpp.
  CHECK(error_of([&] { f.schedules.add({.id = "z", .spec = "0 * * * *", .max_runs = 0}); }) ==
        "max_runs: 0 is not a count of runs (1 to 2147483647)");
  CHECK(error_of([&] { f.schedules.add({.id = "z", .spec = "0 * * * *", .overlap = "skip"}); }) ==
        "overlap: skip is for schedules of a job class; emit publishes events, which do not overlap");
  CHECK(error_of([&] { f.schedules.add({.id = "z", .spec = "0 * * * *", .job = "noop", .overlap = "queue"}); }) ==
        "overlap: 'queue' is not a policy (use allow, skip, buffer_one or cancel_previous)");
  CHECK(error_of([&] {
          f.schedules.add({.id = "z", .spec = "0 * * * *", .start_at = parse_time("2026-11-22T00:00:00Z"),
                           .end_at = parse_time("2026-11-21T23:00:00Z")});
        }) == "end_at: 2026-11-21T23:00:00Z is not after start_at 2026-11-22T00:00:00Z");
  CHECK(error_of([&] { f.schedules.add({.id = "z", .spec = "0 * * * *", .end_at = parse_time("2026-11-21T10:00:00Z")}); }) ==
        "end_at: 2026-11-21T10:00:00Z is not after now (2026-11-21T10:05:30Z)");
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.cron_schedule") == 0);

  f.schedules.add({.id = "ok", .spec = "0 * * * *"});
  const auto backfill = [&](const char* from, const char* to) {
    return error_of([&] { f.schedules.backfill("ok", parse_time(from), parse_time(to), "ops"); });
  };
  CHECK(backfill("2026-11-21T09:00:00Z", "2026-11-21T08:00:00Z") ==
        "to: 2026-11-21T08:00:00Z is before from 2026-11-21T09:00:00Z");
  CHECK(backfill("2025-11-01T00:00:00Z", "2026-11-21T08:00:00Z") ==
        "the range 2025-11-01T00:00:00Z to 2026-11-21T08:00:00Z is over a year (at most 366 days)");
  CHECK(backfill("2026-11-21T08:00:00Z", "2026-11-21T11:00:00Z") ==
        "to: 2026-11-21T11:00:00Z is in the future (now 2026-11-21T10:05:30Z): a backfill fires a past range");
  CHECK_THROWS_AS(f.schedules.backfill("nope", parse_time("2026-11-21T08:00:00Z"), parse_time("2026-11-21T09:00:00Z"),
                                       "ops"),
                  NotFound);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job WHERE job_key LIKE 'cron-backfill:%'") == 0);
}

TEST_CASE("the same through SQL as prescient_client: options, update, backfill, a pause note") {
  SchedulePoliciesFixture f;
  std::string suffix;
  *f.db << "SELECT current_database()", soci::into(suffix);
  Login login(*f.db, "client_" + suffix, "prescient_client");
  auto db = connect_to(as_user(f.url, login.name));
  int version = 0;
  *db << "SELECT prescient.cron_add('p', '0 * * * *', p_job => 'noop', p_now => '2026-11-21T10:05:30Z',"
         " p_options => '{\"overlap\": \"skip\", \"max_runs\": 2, \"end_at\": \"2026-12-01T00:00:00Z\"}')",
      soci::into(version);
  ScheduleDefinition d = f.schedules.show("p");
  CHECK(d.overlap == "skip");
  CHECK(d.max_runs == std::optional<int>(2));
  CHECK(format_time(*d.end_at) == "2026-12-01T00:00:00Z");
  std::string carried;
  *db << "SELECT payload::text FROM prescient.future_job WHERE job_key = 'cron:p'", soci::into(carried);
  const auto payload = nlohmann::json::parse(carried);
  CHECK(payload["overlap"] == "skip");
  CHECK(payload["max_runs"] == 2);
  CHECK(payload["runs"] == 0);
  int added = 0;
  *db << "SELECT prescient.cron_add_many('[{\"id\": \"q\", \"spec\": \"@hourly\", \"job\": \"noop\","
         " \"overlap\": \"buffer_one\", \"start_at\": \"2026-11-22T00:00:00Z\"}]', p_now => '2026-11-21T10:05:30Z')",
      soci::into(added);
  CHECK(f.schedules.show("q").overlap == "buffer_one");
  *db << "SELECT prescient.cron_update('q', '{\"overlap\": null, \"max_runs\": 7}', p_now => '2026-11-21T10:05:30Z')",
      soci::into(version);
  d = f.schedules.show("q");
  CHECK(d.overlap == "allow");
  CHECK(d.max_runs == std::optional<int>(7));
  int paused = 0;
  *db << "SELECT prescient.cron_pause('q', p_now => '2026-11-21T10:05:30Z', p_note => 'maintenance')::int",
      soci::into(paused);
  CHECK(paused == 1);
  CHECK(f.schedules.show("q").pause_note == std::optional<std::string>("maintenance"));
  long long backfill_id = 0;
  *db << "SELECT prescient.cron_backfill('p', '2026-11-21T06:00:00Z', '2026-11-21T09:00:00Z',"
         " p_now => '2026-11-21T10:05:30Z')",
      soci::into(backfill_id);
  CHECK(backfill_id > 0);
  const auto sql_error = [&](const std::string& sql) {
    return error_of([&] { *db << sql; });
  };
  // cron_add refuses one schedule without naming an item; cron_add_arrays names it.
  const auto refused_once = [&](const std::string& options, const std::string& why) {
    const std::string error = sql_error("SELECT prescient.cron_add('r', '0 * * * *', p_options => '" + options + "')");
    return error.find(why) != std::string::npos && error.find("item 1:") == std::string::npos;
  };
  CHECK(refused_once(R"({"max_runs": 0})", "max_runs: 0 is not a count of runs (1 to 2147483647)"));
  CHECK(refused_once(R"({"overlap": "skip"})", "overlap: skip is for schedules of a job class"));
  CHECK(refused_once(R"({"start": "x"})", "start: not an option (use overlap, start_at, end_at, max_runs, priority, "
                                          "pause_after_failures, dst_repeated, dst_missing, calendar, when_closed)"));
  CHECK(refused_once(R"({"end_at": "soon"})", "end_at: 'soon' is not a time"));
  CHECK(sql_error("SELECT prescient.cron_add_arrays('{q,r}', '{@daily,0 * * * *}',"
                  " p_options => ARRAY[NULL, '{\"max_runs\": 0}']::jsonb[])")
            .find("item 2: max_runs: 0 is not a count of runs (1 to 2147483647)") != std::string::npos);
  CHECK(sql_error("SELECT prescient.cron_backfill('p', '2026-11-21T09:00:00Z', '2026-11-21T06:00:00Z')")
            .find("to: 2026-11-21T06:00:00Z is before from 2026-11-21T09:00:00Z") != std::string::npos);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.cron_schedule WHERE id = 'r'") == 0);
}
