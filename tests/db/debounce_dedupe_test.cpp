// The complete deferred check (docs/concepts.md, "Debounce with a ceiling" and "Dedupe"): a debounce that
// fires at its ceiling while enqueues keep coming, and a job key not scheduled again within a window after
// it settled. On a 1-minute grid, time driven by a ManualClock.
#include <catch2/catch.hpp>
#include <soci/soci.h>

#include <future>
#include <thread>

#include "builtin_jobs.hpp"
#include "prescient/client.hpp"
#include "prescient/errors.hpp"
#include "prescient/slot_runner.hpp"
#include "prescient/time_text.hpp"
#include "client_fixture.hpp"
#include "test_database.hpp"

using namespace prescient;
using namespace prescient::jobs;
using namespace std::chrono_literals;
using prescient::testing::connect_to;
using prescient::testing::count_of;

namespace {

struct DebounceDedupeFixture : prescient::testing::ClientFixture {
  DebounceDedupeFixture() : ClientFixture("2026-11-21T00:00:00Z") {}

  // Runs every slot from `from` up to `to`, one minute at a time, where something is due.
  void run_until(TimePoint from, TimePoint to) {
    SlotRunner runner({.database_url = url, .runner_id = "r"}, registry, clock);
    for (TimePoint t = from; t <= to; t += 1min) {
      clock.set(t);
      if (count_of(*db, "SELECT count(*) FROM prescient.future_job WHERE next_check_at <= '" + format_time(t) +
                            "'::timestamptz") > 0) {
        runner.run_slot(t);
      }
    }
  }
  std::vector<std::string> fired() {
    std::vector<std::string> times;
    soci::rowset<std::string> rows = (db->prepare << "SELECT prescient.iso(last_check_at) FROM prescient.job_history"
                                                     " WHERE outcome = 'done' ORDER BY last_check_at");
    for (const std::string& t : rows) times.push_back(t);
    return times;
  }
};

ScheduleRequest reminder(std::chrono::seconds in, std::chrono::seconds max_wait) {
  return {.job = "noop", .entity_name = "orders", .entity_key = "42", .job_key = "remind:42", .in = in,
          .on_conflict = OnConflict::debounce, .max_wait = max_wait};
}

}  // namespace

TEST_CASE("a debounce hit every 50 minutes for a day fires at its 6-hour ceiling, each counted from its first enqueue") {
  DebounceDedupeFixture f;
  const TimePoint start = f.clock.now();
  std::vector<Scheduled::Status> statuses;
  for (TimePoint hit = start; hit < start + 24h; hit += 50min) {
    f.run_until(f.clock.now(), hit);  // what fell due before this hit fires first
    statuses.push_back(f.client.schedule(reminder(1h, 6h)).status);
  }
  f.run_until(f.clock.now(), start + 24h);
  // Without a ceiling it would never fire: every hit moves it an hour on. With one, a chain of hits fires
  // 6 h after its first; the next hit after that starts a new chain (06:40, 13:20, 20:00 are hits).
  CHECK(f.fired() == std::vector<std::string>{"2026-11-21T06:00:00Z", "2026-11-21T12:40:00Z",
                                              "2026-11-21T19:20:00Z"});
  CHECK(statuses.front() == Scheduled::Status::created);
  CHECK(std::count(statuses.begin(), statuses.end(), Scheduled::Status::created) == 4);  // 00:00, 06:40, 13:20, 20:00
  CHECK(std::count(statuses.begin(), statuses.end(), Scheduled::Status::debounced) ==
        static_cast<long>(statuses.size()) - 4);
  // The fourth chain, from 20:00, is pending: its last hit, 23:20, moved it to 00:20, within its 02:00 ceiling.
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job"
                        " WHERE next_check_at = '2026-11-22T00:20:00Z'::timestamptz") == 1);
}

TEST_CASE("a debounced check takes the latest time and payload, within its ceiling") {
  DebounceDedupeFixture f;
  ScheduleRequest r = reminder(30min, 2h);
  CHECK(format_time(*f.client.schedule(r).next_check_at) == "2026-11-21T00:30:00Z");
  f.clock.set(parse_time("2026-11-21T00:20:00Z"));
  r.payload = {{"seen", 2}};
  const Scheduled moved = f.client.schedule(r);
  CHECK(moved.status == Scheduled::Status::debounced);
  CHECK(format_time(*moved.next_check_at) == "2026-11-21T00:50:00Z");
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job WHERE payload = '{\"seen\": 2}'") == 1);
  // A time beyond the ceiling is cut to it; so is a first enqueue's.
  r.in = 5h;
  CHECK(format_time(*f.client.schedule(r).next_check_at) == "2026-11-21T02:00:00Z");
  r.job_key = "remind:43";
  CHECK(format_time(*f.client.schedule(r).next_check_at) == "2026-11-21T02:20:00Z");
}

TEST_CASE("16 sessions debouncing one key at once leave one pending check, within the ceiling") {
  DebounceDedupeFixture f;
  std::promise<void> go;
  std::shared_future<void> start = go.get_future().share();
  std::vector<std::future<Scheduled::Status>> done;
  for (int i = 0; i < 16; ++i) {
    done.push_back(std::async(std::launch::async, [&f, start, i] {
      auto db = connect_to(f.url);
      Client client(*db, {.clock = &f.clock});
      start.wait();
      return client.schedule(reminder(std::chrono::minutes{10 + 17 * i}, 1h)).status;
    }));
  }
  go.set_value();
  int created = 0;
  for (auto& d : done) created += d.get() == Scheduled::Status::created ? 1 : 0;
  CHECK(created == 1);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job WHERE job_key = 'remind:42'") == 1);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job WHERE job_key = 'remind:42'"
                        " AND next_check_at <= enqueued_on + interval '1 hour'") == 1);
}

TEST_CASE("dedupe: a key settled within the window is not scheduled again; the answer names the check") {
  DebounceDedupeFixture f;
  ScheduleRequest webhook{.job = "noop", .entity_name = "orders", .entity_key = "42", .job_key = "welcome:42",
                          .in = 0s, .dedupe_for = 24h};
  const Scheduled first = f.client.schedule(webhook);
  REQUIRE(first.status == Scheduled::Status::created);
  f.run_until(f.clock.now(), f.clock.now() + 1min);
  REQUIRE(f.fired().size() == 1);

  f.clock.advance(3h);  // the webhook is retried
  const Scheduled again = f.client.schedule(webhook);
  CHECK(again.status == Scheduled::Status::deduplicated);
  CHECK(again.id == first.id);
  CHECK_FALSE(again.next_check_at);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == 0);

  f.clock.advance(22h);  // 25 h after it settled: outside the window
  CHECK(f.client.schedule(webhook).status == Scheduled::Status::created);
  *f.db << "DELETE FROM prescient.future_job";

  // Only the outcomes named count: a cancelled check does not, unless named.
  const Scheduled cancelled = f.client.schedule({.job = "noop", .entity_name = "orders", .entity_key = "7",
                                                 .job_key = "welcome:7", .in = 1h});
  f.client.cancel_id(cancelled.id);
  ScheduleRequest seven{.job = "noop", .entity_name = "orders", .entity_key = "7", .job_key = "welcome:7", .in = 1h,
                        .dedupe_for = 1h};
  f.clock.advance(1min);
  const Scheduled not_deduped = f.client.schedule(seven);
  CHECK(not_deduped.status == Scheduled::Status::created);
  f.client.cancel_id(not_deduped.id);
  seven.dedupe_outcomes = {Outcome::done, Outcome::cancelled};
  const Scheduled deduped = f.client.schedule(seven);
  CHECK(deduped.status == Scheduled::Status::deduplicated);
  CHECK(deduped.id == not_deduped.id);  // the latest settled
}

TEST_CASE("dedupe racing the settlement of the same key: the enqueue waits for it and never lets both in") {
  const bool bulk = GENERATE(false, true);  // Client::schedule, or schedule_many (schedule_arrays)
  CAPTURE(bulk);
  DebounceDedupeFixture f;
  const Scheduled pending = f.client.schedule({.job = "noop", .entity_name = "orders", .entity_key = "42",
                                               .job_key = "welcome:42", .in = 0s});
  // A settlement in flight: the pending row deleted and its history written, not yet committed.
  auto settling = connect_to(f.url);
  *settling << "BEGIN";
  *settling << "INSERT INTO prescient.job_history (id, job, entity_name, entity_key, job_key, payload, first_check_at,"
               " last_check_at, check_count, attempts, enqueued_on, enqueued_by, finished_at, finished_by, outcome)"
               " SELECT id, job, entity_name, entity_key, job_key, payload, first_check_at, next_check_at, 1, 0,"
               " enqueued_on, enqueued_by, '2026-11-21T00:01:00Z', 'r', 'done'"
               " FROM prescient.future_job WHERE id = :id",
      soci::use(pending.id);
  *settling << "DELETE FROM prescient.future_job WHERE id = :id", soci::use(pending.id);

  f.clock.set(parse_time("2026-11-21T00:02:00Z"));
  auto enqueue = std::async(std::launch::async, [&f, bulk] {
    auto db = connect_to(f.url);
    Client client(*db, {.clock = &f.clock});
    const ScheduleRequest request{.job = "noop", .entity_name = "orders", .entity_key = "42",
                                  .job_key = "welcome:42", .in = 1h, .on_conflict = OnConflict::keep,
                                  .dedupe_for = 1h};
    return bulk ? client.schedule_many(std::span(&request, 1)).at(0) : client.schedule(request);
  });
  CHECK(enqueue.wait_for(300ms) == std::future_status::timeout);  // held by the settlement's key
  *settling << "COMMIT";
  const Scheduled answer = enqueue.get();  // (bulk: the insert waited on the key, the lookup saw it)
  CHECK(answer.status == Scheduled::Status::deduplicated);
  CHECK(answer.id == pending.id);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == 0);
}

TEST_CASE("a bad debounce or dedupe is refused naming the value, in C++ and SQL; nothing is written") {
  DebounceDedupeFixture f;
  const auto refused = [&](ScheduleRequest r) {
    try {
      f.client.schedule(r);
    } catch (const InvalidInput& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  ScheduleRequest r = reminder(1h, 6h);
  r.max_wait = 10s;
  CHECK_THAT(refused(r), Catch::Contains("max_wait 10s is under the slot (1m)"));
  r.max_wait.reset();
  CHECK_THAT(refused(r), Catch::Contains("debounce needs max_wait"));
  r = reminder(1h, 6h);
  r.job_key.reset();
  CHECK_THAT(refused(r), Catch::Contains("debounce needs a job key"));
  r = reminder(1h, 6h);
  r.on_conflict = OnConflict::replace;
  CHECK_THAT(refused(r), Catch::Contains("max_wait applies to on_conflict debounce or collect, not 'replace'"));
  ScheduleRequest d{.job = "noop", .entity_name = "orders", .entity_key = "1", .job_key = "k", .in = 1h,
                    .dedupe_for = -1h};
  CHECK_THAT(refused(d), Catch::Contains("the dedupe window -1h is not positive"));
  d.dedupe_for = 400 * 24h;
  CHECK_THAT(refused(d), Catch::Contains("is over 366 days"));
  std::vector<ScheduleRequest> bulk{reminder(1h, 6h), reminder(1h, 6h)};
  bulk[1].job_key = "remind:43";
  bulk[1].max_wait = 10s;
  CHECK_THROWS_WITH(f.client.schedule_many(bulk), Catch::Contains("item 2: max_wait 10s is under the slot"));
  ScheduleRequest done_only{.job = "noop", .entity_name = "o", .entity_key = "1", .job_key = "a", .in = 1h,
                            .dedupe_for = 1h};
  ScheduleRequest cancelled_too = done_only;
  cancelled_too.job_key = "b";
  cancelled_too.dedupe_outcomes = {Outcome::cancelled};
  const std::vector<ScheduleRequest> mixed{done_only, cancelled_too};
  CHECK_THROWS_WITH(f.client.schedule_many(mixed), Catch::Contains("item 2: the requests of one call that dedupe"));
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == 0);

  const auto sql_refused = [&](const std::string& sql) {
    try {
      *f.db << sql;
    } catch (const soci::soci_error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK_THAT(sql_refused("SELECT count(*) FROM prescient.schedule('noop', 'o', '1', now(), 'k',"
                         " p_on_conflict => 'debounce', p_max_wait => '30 seconds')"),
             Catch::Contains("max_wait 30s is under the slot (1m)"));
  CHECK_THAT(sql_refused("SELECT count(*) FROM prescient.schedule('noop', 'o', '1', now(), 'k',"
                         " p_dedupe_for => '1 day', p_dedupe_outcomes => '{done,exploded}')"),
             Catch::Contains("unknown outcome 'exploded'"));
  CHECK_THAT(sql_refused("SELECT count(*) FROM prescient.schedule_many('[{\"job\": \"noop\", \"entity_name\": \"o\","
                         " \"entity_key\": \"1\", \"at\": \"2026-11-21T01:00:00Z\", \"job_key\": \"k\","
                         " \"on_conflict\": \"debounce\"}]')"),
             Catch::Contains("item 1: debounce needs max_wait"));
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == 0);
}

TEST_CASE("bulk: debounce and dedupe per item in one call, as one at a time does them") {
  DebounceDedupeFixture f;
  // Settled an hour ago: welcome:1. Pending since midnight with a 6-hour ceiling: remind:2.
  const Scheduled welcome = f.client.schedule({.job = "noop", .entity_name = "orders", .entity_key = "1",
                                               .job_key = "welcome:1", .in = 0s});
  f.run_until(f.clock.now(), f.clock.now() + 1min);
  f.client.schedule(reminder(1h, 6h));  // first enqueued at 00:01
  f.clock.set(parse_time("2026-11-21T05:30:00Z"));
  std::vector<ScheduleRequest> requests{
      {.job = "noop", .entity_name = "orders", .entity_key = "1", .job_key = "welcome:1", .in = 0s,
       .dedupe_for = 24h},                                                                      // settled: not again
      {.job = "noop", .entity_name = "orders", .entity_key = "3", .job_key = "welcome:3", .in = 0s,
       .dedupe_for = 24h},                                                                      // never seen: created
      reminder(1h, 6h),                                                                         // capped at 06:01
      {.job = "noop", .entity_name = "orders", .entity_key = "4", .job_key = "remind:4", .in = 9h,
       .on_conflict = OnConflict::debounce, .max_wait = 6h},                                    // new: 11:30
      {.job = "noop", .entity_name = "orders", .entity_key = "5", .in = 1h}};                   // keyless
  const std::vector<Scheduled> answers = f.client.schedule_many(requests);
  REQUIRE(answers.size() == 5);
  CHECK(answers[0].status == Scheduled::Status::deduplicated);
  CHECK(answers[0].id == welcome.id);
  CHECK(answers[1].status == Scheduled::Status::created);
  CHECK(answers[2].status == Scheduled::Status::debounced);
  CHECK(format_time(*answers[2].next_check_at) == "2026-11-21T06:01:00Z");
  CHECK(answers[3].status == Scheduled::Status::created);
  CHECK(format_time(*answers[3].next_check_at) == "2026-11-21T11:30:00Z");
  CHECK(answers[4].status == Scheduled::Status::created);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job WHERE job_key = 'welcome:1'") == 0);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == 4);
}
