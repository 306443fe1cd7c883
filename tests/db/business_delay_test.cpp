// A check timed in business time (sql/functions/038_business_delay.sql, docs/business-time.md "Enqueue in
// business time"): enqueued one at a time and in bulk through the C++ client, with a business delay or at the
// next opening, its window counted in open time, replaced, rescheduled, run to its history; and bad input
// refused in one line naming the value with nothing written. The arithmetic itself: business_time_test.cpp and
// the oracle.
#include <catch2/catch.hpp>
#include <soci/soci.h>

#include <set>
#include <string>
#include <vector>

#include "client_fixture.hpp"
#include "prescient/checks.hpp"
#include "prescient/job.hpp"
#include "prescient/errors.hpp"
#include "prescient/slot_runner.hpp"
#include "prescient/time_text.hpp"
#include "test_database.hpp"

using namespace prescient;
using prescient::testing::count_of;

namespace {

// Monday to Friday 09:00-17:00 in Berlin, Christmas closed. The clock: Friday 27 November 2026 15:00 in Berlin.
const char* kOfficeWeek = R"({"hours": {"mon": ["09:00-17:00"], "tue": ["09:00-17:00"], "wed": ["09:00-17:00"],
  "thu": ["09:00-17:00"], "fri": ["09:00-17:00"]}, "holidays": ["12-25"]})";

// Answers "look again in the delay of the calendar" its payload names (docs/business-time.md, "Answers in
// business time"), or a plain time too when the payload says "both".
class EscalateLater final : public JobExec {
 public:
  JobResult run(const Check& check, JobContext& ctx) override {
    JobResult result{.next_in_business_time = BusinessDelay{.calendar = check.payload.at("calendar"),
                                                             .delay = check.payload.at("delay")}};
    if (check.payload.contains("both")) result.next = ctx.slot() + std::chrono::hours(1);
    return result;
  }
};

struct BusinessDelayFixture : prescient::testing::ClientFixture {
  BusinessDelayFixture() : ClientFixture("2026-11-27T14:00:00Z") {
    const std::string definition = kOfficeWeek;
    *db << "SELECT prescient.calendar_set('office', 'Europe/Berlin', :d::jsonb)", soci::use(definition);
  }

  ScheduleRequest check(const std::string& key) {
    return {.job = "noop", .entity_name = "tickets", .entity_key = key, .calendar = "office"};
  }
  std::string due(const Scheduled& s) { return format_time(*s.next_check_at); }
  // The calendar columns of a pending check: "calendar version delay" ("-" for none).
  std::string timing(std::int64_t id) {
    std::string out;
    *db << "SELECT concat_ws(' ', coalesce(calendar, '-'), coalesce(calendar_version::text, '-'),"
           " coalesce(business_delay, '-')) FROM prescient.future_job WHERE id = :id",
        soci::use(id), soci::into(out);
    return out;
  }
  // The same of each timeline row of a check (its runs that left it pending), oldest first.
  std::vector<std::string> run_timings(std::int64_t id) {
    std::vector<std::string> out(100);
    *db << "SELECT concat_ws(' ', result, coalesce(calendar, '-'), coalesce(calendar_version::text, '-'),"
           " coalesce(business_delay, '-')) FROM prescient.check_run WHERE id = :id ORDER BY finished_at, due_at",
        soci::use(id), soci::into(out);
    return out;
  }
};

}  // namespace

TEST_CASE_METHOD(BusinessDelayFixture, "business delay: 4h, 3bd and the next opening, one at a time and in bulk") {
  ScheduleRequest four_hours = check("1");
  four_hours.business_delay = "4h";  // 2 hours on Friday, 2 on Monday
  const Scheduled a = client.schedule(four_hours);
  CHECK(due(a) == "2026-11-30T10:00:00Z");
  CHECK(timing(a.id) == "office 1 4h");

  ScheduleRequest three_days = check("2");
  three_days.business_delay = "3bd";  // Wednesday, the same time of day
  CHECK(due(client.schedule(three_days)) == "2026-12-02T14:00:00Z");

  ScheduleRequest saturday = check("3");
  saturday.at = parse_time("2026-11-28T10:00:00Z");  // closed: the next opening, Monday 09:00
  const Scheduled c = client.schedule(saturday);
  CHECK(due(c) == "2026-11-30T08:00:00Z");
  CHECK(timing(c.id) == "office 1 -");

  ScheduleRequest now = check("4");  // no time: now, open, so the next slot
  CHECK(due(client.schedule(now)) == "2026-11-27T14:01:00Z");

  // The same requests in one bulk call give the same times; one without a calendar is untouched.
  ScheduleRequest plain{.job = "noop", .entity_name = "tickets", .entity_key = "5", .in = std::chrono::hours(4)};
  std::vector<ScheduleRequest> many{four_hours, three_days, saturday, plain};
  for (std::size_t i = 0; i < many.size(); ++i) many[i].entity_key = "bulk" + std::to_string(i);
  const std::vector<Scheduled> bulk = client.schedule_many(many);
  CHECK(due(bulk[0]) == "2026-11-30T10:00:00Z");
  CHECK(due(bulk[1]) == "2026-12-02T14:00:00Z");
  CHECK(due(bulk[2]) == "2026-11-30T08:00:00Z");
  CHECK(due(bulk[3]) == "2026-11-27T18:00:00Z");
  CHECK(timing(bulk[0].id) == "office 1 4h");
  CHECK(timing(bulk[3].id) == "- - -");
}

TEST_CASE_METHOD(BusinessDelayFixture, "business delay: a herd's window is counted in open time, never closed time") {
  // 200 checks at 16:55 in Berlin with a 20-minute window: 5 minutes are left on Friday, the rest is Monday
  // morning; none lands between Friday 17:00 and Monday 09:00.
  std::vector<ScheduleRequest> herd;
  for (int i = 0; i < 200; ++i) {
    ScheduleRequest r = check("herd" + std::to_string(i));
    r.at = parse_time("2026-11-27T15:55:00Z");
    r.window = std::chrono::minutes(20);
    herd.push_back(r);
  }
  std::set<std::string> times;
  for (const Scheduled& s : client.schedule_many(herd)) times.insert(due(s));
  ScheduleRequest one = check("one");
  one.at = parse_time("2026-11-27T15:55:00Z");
  one.window = std::chrono::minutes(20);
  times.insert(due(client.schedule(one)));
  for (const std::string& t : times) {
    INFO(t);
    CHECK(((t >= "2026-11-27T15:55:00Z" && t <= "2026-11-27T16:00:00Z") ||
           (t >= "2026-11-30T08:00:00Z" && t <= "2026-11-30T08:15:00Z")));
  }
  CHECK(times.size() == 20);  // the window's 20 slots, all used
}

TEST_CASE_METHOD(BusinessDelayFixture, "business delay: a replace retimes, a reschedule leaves business time, "
                                       "the history keeps the calendar and its version") {
  ScheduleRequest r = check("1");
  r.job_key = "ticket-1";
  r.business_delay = "4h";
  const Scheduled first = client.schedule(r);
  // The calendar changes (Monday is a holiday now): a time computed after it uses version 2.
  *db << "SELECT prescient.calendar_add_holidays('office', '{2026-11-30}')";
  CHECK(due(first) == "2026-11-30T10:00:00Z");  // computed before: stays
  r.on_conflict = OnConflict::replace;
  const Scheduled replaced = client.schedule(r);
  CHECK(replaced.id == first.id);
  CHECK(due(replaced) == "2026-12-01T10:00:00Z");
  CHECK(timing(first.id) == "office 2 4h");

  client.reschedule_id(first.id, parse_time("2026-11-28T12:00:00Z"));  // a Saturday, in elapsed time
  CHECK(timing(first.id) == "- - -");

  ScheduleRequest other = check("2");
  other.business_delay = "1h";
  const Scheduled ran = client.schedule(other);
  clock.set(*ran.next_check_at);
  SlotRunner runner({.database_url = url, .runner_id = "r"}, registry, clock);
  runner.run_slot(*ran.next_check_at);
  const std::vector<HistoryEntry> history = Checks(*db).history({.id = ran.id});
  REQUIRE(history.size() == 1);
  CHECK(history[0].calendar == "office");
  CHECK(history[0].calendar_version == 2);
  CHECK(history[0].business_delay == "1h");
}

TEST_CASE_METHOD(BusinessDelayFixture, "business delay: bad input is refused in one line naming the value, "
                                       "nothing written") {
  struct Case {
    std::optional<std::string> calendar, delay;
    std::optional<TimePoint> at;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"nowhere", "4h", std::nullopt, "no calendar named 'nowhere' (prescient calendar list)"},
      {std::nullopt, "4h", parse_time("2026-11-28T10:00:00Z"), "business delay '4h' needs a calendar to count it in"},
      {"office", "0bd", std::nullopt, "business delay '0bd': give 1 or more business days"},
      {"office", "0h", std::nullopt, "business delay '0h': give a length of open time more than zero"},
      {"office", "-4h", std::nullopt, "business delay '-4h': write a length of open time more than zero"},
      {"office", "1 day", std::nullopt, "business delay '1 day': write a length of open time more than zero"},
      {"office", std::nullopt, parse_time("1999-06-01T00:00:00Z"), "1999-06-01T00:00:00Z is outside calendar 'office''s range"},
  };
  for (const Case& c : cases) {
    INFO(c.says);
    ScheduleRequest r{.job = "noop", .entity_name = "tickets", .entity_key = "bad", .at = c.at, .calendar = c.calendar,
                      .business_delay = c.delay};
    CHECK_THROWS_WITH(client.schedule(r), Catch::Contains(c.says));
    CHECK_THROWS_WITH(client.schedule_many(std::vector<ScheduleRequest>{check("good"), r}),
                      Catch::Contains("item 2: " + c.says));
    const auto problems = client.problems_with(std::vector<ScheduleRequest>{check("good"), r});
    CHECK(!problems[0]);
    CHECK_THAT(problems[1].value_or(""), Catch::Contains(c.says));
  }
  // A delay beside a business delay: the client's own rule, before anything is sent.
  ScheduleRequest both = check("both");
  both.business_delay = "4h";
  both.in = std::chrono::hours(1);
  CHECK_THROWS_AS(client.schedule(both), InvalidInput);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job") == 0);
}

TEST_CASE_METHOD(BusinessDelayFixture, "business delay: a job class answers in business time; a bad answer fails "
                                       "its check alone") {
  registry.add("escalate_later", [] { return std::make_unique<EscalateLater>(); });
  *db << "INSERT INTO prescient.job_class (job, origin, declared_at, declared_by) VALUES ('escalate_later', 'declared', now(), 'test')";
  const auto enqueue = [&](const std::string& key, nlohmann::json payload) {
    return client.schedule({.job = "escalate_later", .entity_name = "tickets", .entity_key = key,
                            .at = parse_time("2026-11-27T14:00:00Z"), .payload = std::move(payload)}).id;
  };
  const std::int64_t four_hours = enqueue("1", {{"calendar", "office"}, {"delay", "4h"}});
  const std::int64_t three_days = enqueue("2", {{"calendar", "office"}, {"delay", "3bd"}});
  const std::int64_t unknown = enqueue("3", {{"calendar", "nowhere"}, {"delay", "4h"}});
  const std::int64_t not_a_delay = enqueue("4", {{"calendar", "office"}, {"delay", "1 day"}});
  const std::int64_t both = enqueue("5", {{"calendar", "office"}, {"delay", "4h"}, {"both", true}});
  // A delay the arithmetic itself refuses (business_after raises for 0bd): judged first, it fails its check
  // alone; resolved unjudged, it failed the statement and so the whole batch.
  const std::int64_t no_days = enqueue("6", {{"calendar", "office"}, {"delay", "0bd"}});
  clock.set(parse_time("2026-11-27T14:01:00Z"));  // Friday 15:01 in Berlin: the checks' slot
  SlotRunner runner({.database_url = url, .runner_id = "r"}, registry, clock);
  const SlotReport report = runner.run_slot(parse_time("2026-11-27T14:01:00Z"));
  CHECK(report.claimed == 6);
  const auto pending = [&](std::int64_t id) {
    const std::vector<PendingCheck> found = Checks(*db).pending({.id = id});
    return found.empty() ? std::string("none") : format_time(found[0].next_check_at) + " attempts " +
                                                     std::to_string(found[0].attempts) + " " +
                                                     found[0].last_error.value_or("");
  };
  CHECK(pending(four_hours) == "2026-11-30T10:01:00Z attempts 0 ");  // 1:59 on Friday, 2:01 on Monday
  CHECK(pending(three_days) == "2026-12-02T14:01:00Z attempts 0 ");  // Wednesday, the same time of day
  CHECK_THAT(pending(unknown), Catch::Contains("attempts 1 its answer in business time (4h of calendar nowhere): "
                                               "no calendar named 'nowhere'"));
  CHECK_THAT(pending(not_a_delay), Catch::Contains("attempts 1 its answer in business time (1 day of calendar office): "
                                                   "business delay '1 day'"));
  CHECK_THAT(pending(both), Catch::Contains("attempts 1 the job answered both a next time and one in business time"));
  CHECK_THAT(pending(no_days), Catch::Contains("attempts 1 its answer in business time (0bd of calendar office): "
                                               "business delay '0bd': give 1 or more business days"));
  // The timeline names what computed each answer's time; a failed one is a plain retry.
  CHECK(run_timings(four_hours) == std::vector<std::string>{"rescheduled office 1 4h"});
  CHECK(run_timings(three_days) == std::vector<std::string>{"rescheduled office 1 3bd"});
  CHECK(run_timings(unknown) == std::vector<std::string>{"retried - - -"});
  const CheckTrace trace = Checks(*db).trace(four_hours, std::nullopt);
  REQUIRE(trace.runs.size() == 1);
  CHECK(trace.runs[0].calendar == std::optional<std::string>("office"));
  CHECK(trace.runs[0].calendar_version == std::optional<int>(1));
  CHECK(trace.runs[0].business_delay == std::optional<std::string>("4h"));
}

TEST_CASE_METHOD(BusinessDelayFixture, "business delay: a worker answers in business time; a bad answer is refused "
                                       "naming the check, nothing settled") {
  *db << "SELECT prescient.job_class_add('escalate_worker', true)";
  *db << "UPDATE prescient.settings SET workers_may_pin_clock = true";
  std::vector<std::int64_t> ids;
  for (const char* key : {"1", "2", "3"}) {
    ids.push_back(client.schedule({.job = "escalate_worker", .entity_name = "tickets", .entity_key = key,
                                   .at = parse_time("2026-11-27T14:00:00Z")}).id);
  }
  // Friday 15:01 in Berlin: the worker takes the three.
  std::vector<long long> tokens;
  soci::rowset<soci::row> taken = db->prepare << "SELECT id, lease_token FROM prescient.worker_take('w1',"
                                                 " '{escalate_worker}', 10, 30, '2026-11-27T14:01:00Z') ORDER BY id";
  for (const soci::row& r : taken) tokens.push_back(r.get<long long>(1));
  REQUIRE(tokens.size() == 3);
  const std::string ids_text = "{" + std::to_string(ids[0]) + "," + std::to_string(ids[1]) + "," +
                               std::to_string(ids[2]) + "}";
  const std::string tokens_text = "{" + std::to_string(tokens[0]) + "," + std::to_string(tokens[1]) + "," +
                                  std::to_string(tokens[2]) + "}";
  const auto complete = [&](const std::string& next, const std::string& calendars, const std::string& delays) {
    try {
      *db << "SAVEPOINT answer";
      *db << "SELECT count(*) FROM prescient.worker_complete('w1', CAST(:ids AS bigint[]), CAST(:tokens AS bigint[]),"
             " CAST(:next AS timestamptz[]), NULL, '2026-11-27T14:01:10Z', CAST(:calendars AS text[]),"
             " CAST(:delays AS text[]))",
          soci::use(ids_text), soci::use(tokens_text), soci::use(next), soci::use(calendars), soci::use(delays);
      *db << "RELEASE SAVEPOINT answer";
      return std::string();
    } catch (const std::exception& e) {
      *db << "ROLLBACK TO SAVEPOINT answer";
      return std::string(e.what());
    }
  };
  *db << "BEGIN";
  // Refused whole, naming the check: an unknown calendar, a delay that is not one, both answers at once.
  CHECK_THAT(complete("{NULL,NULL,NULL}", "{office,nowhere,NULL}", "{4h,4h,NULL}"),
             Catch::Contains("check " + std::to_string(ids[1]) + ": no calendar named 'nowhere'"));
  CHECK_THAT(complete("{NULL,NULL,NULL}", "{office,office,NULL}", "{4h,1d,NULL}"),
             Catch::Contains("check " + std::to_string(ids[1]) + ": business delay '1d'"));
  CHECK_THAT(complete("{2026-11-28T00:00:00Z,NULL,NULL}", "{office,NULL,NULL}", "{4h,NULL,NULL}"),
             Catch::Contains("check " + std::to_string(ids[0]) + ": answered both a next time and one in business time"));
  CHECK_THAT(complete("{NULL,NULL,NULL}", "{office,office}", "{4h,4h,NULL}"),
             Catch::Contains("3 ids but 2 calendars: one per check"));
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job WHERE claimed_by = 'w1'") == 3);
  // 4 open hours from Friday 15:01:10 (Monday 11:01:10, on the grid 11:02); the next opening, now; done.
  CHECK(complete("{NULL,NULL,NULL}", "{office,office,NULL}", "{4h,NULL,NULL}").empty());
  *db << "COMMIT";
  const auto due = [&](std::int64_t id) {
    const std::vector<PendingCheck> found = Checks(*db).pending({.id = id});
    return found.empty() ? std::string("done") : format_time(found[0].next_check_at);
  };
  CHECK(due(ids[0]) == "2026-11-30T10:02:00Z");
  CHECK(due(ids[1]) == "2026-11-27T14:02:00Z");  // open now: the next slot
  CHECK(due(ids[2]) == "done");
  // Each run's timeline row names the calendar, its version and the delay (none for the next opening).
  CHECK(run_timings(ids[0]) == std::vector<std::string>{"rescheduled office 1 4h"});
  CHECK(run_timings(ids[1]) == std::vector<std::string>{"rescheduled office 1 -"});
}
