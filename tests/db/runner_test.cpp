#include <catch2/catch.hpp>
#include <signal.h>
#include <soci/soci.h>

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "builtin_jobs.hpp"
#include "prescient/client.hpp"
#include "prescient/job_classes.hpp"
#include "prescient/daemon.hpp"
#include "prescient/errors.hpp"
#include "prescient/plugin.hpp"
#include "prescient/slot_runner.hpp"
#include "db/pg_runner_store.hpp"
#include "prescient/checks.hpp"
#include "prescient/settings.hpp"
#include "prescient/time_text.hpp"
#include "process.hpp"
#include "run_log.hpp"
#include "test_database.hpp"
#include "wait.hpp"

using namespace prescient;
using namespace prescient::jobs;
using namespace prescient::db;
using namespace prescient::runner;
using namespace std::chrono_literals;
using prescient::testing::connect_to;
using prescient::testing::count_of;
using prescient::testing::create_migrated_database;
using prescient::testing::start_prescient;
using prescient::testing::wait_for;
using prescient::testing::wait_until;

namespace {

using prescient::testing::RunLog;

// Answers as its payload says: {"next_in": "1h"} -> slot + 1h, {"next_at": TIME}, {"throw": "why"},
// {"sleep_ms": N}; nothing -> done. Counts every run by check id.

class Scripted : public JobExec {
 public:
  explicit Scripted(RunLog& log, JobPolicy policy = {}) : log_(log), policy_(policy) {}
  JobPolicy policy() const override { return policy_; }
  JobResult run(const Check& check, JobContext& ctx) override {
    log_.record(check.id);
    const auto& p = check.payload;
    if (p.contains("sleep_ms")) std::this_thread::sleep_for(std::chrono::milliseconds(p["sleep_ms"].get<int>()));
    if (p.contains("throw")) throw std::runtime_error(p["throw"].get<std::string>());
    JobResult result;
    if (p.contains("next_in")) result.next = ctx.slot() + std::chrono::seconds(p["next_in"].get<int>());
    if (p.contains("next_at")) result.next = parse_time(p["next_at"].get<std::string>());
    return result;
  }

 private:
  RunLog& log_;
  JobPolicy policy_;
};

// Records, per group, how many run_group calls it got and whether two ever overlapped.
struct GroupLog {
  std::mutex mutex;
  std::map<std::string, int> calls, active, checks;
  std::atomic<int> overlaps{0};
};

class Grouped final : public JobExec {
 public:
  explicit Grouped(GroupLog& log) : log_(log) {}
  JobResult run(const Check&, JobContext&) override { return {}; }
  std::vector<JobResult> run_group(std::span<const Check> checks, JobContext&) override {
    const std::string group = *checks.front().group_key;
    {
      const std::lock_guard lock(log_.mutex);
      if (++log_.active[group] > 1) ++log_.overlaps;
      ++log_.calls[group];
      log_.checks[group] += static_cast<int>(checks.size());
    }
    std::this_thread::sleep_for(2ms);  // widen the window in which an overlap would show
    {
      const std::lock_guard lock(log_.mutex);
      --log_.active[group];
    }
    return std::vector<JobResult>(checks.size());
  }

 private:
  GroupLog& log_;
};

// A 15-minute grid, the clock at 10:05 as in the seeds' example.
struct RunnerFixture {
  std::string url = create_migrated_database(900);
  std::unique_ptr<soci::session> db = connect_to(url);
  ManualClock clock{parse_time("2026-11-21T10:05:00Z")};
  RunLog runs;
  GroupLog groups;
  Registry registry;
  Client client{*db, {.clock = &clock, .enqueued_by = "test"}};

  RunnerFixture() {
    register_builtin_jobs(registry);
    registry.add("scripted", [this] { return std::make_unique<Scripted>(runs); });
    registry.add("once", [this] { return std::make_unique<Scripted>(runs, JobPolicy{.max_checks = 1}); });
    registry.add("quick", [this] {
      return std::make_unique<Scripted>(runs, JobPolicy{.max_attempts = 2, .timeout = std::chrono::seconds{1}});
    });
    registry.add("grouped", [this] { return std::make_unique<Grouped>(groups); });
    load_plugins(PRESCIENT_EXAMPLE_PLUGINS, registry);
    // As a runner with these classes declares them at its start: the checks are enqueued before it starts.
    declare_job_classes(*db, registry, "r1", clock.now());
  }

  SlotRunner runner(int workers = 1, const char* shard = "0/1", std::string id = "r1") {
    return SlotRunner({.database_url = url, .runner_id = std::move(id), .workers = workers,
                       .shard = parse_shard(shard)},
                      registry, clock);
  }

  Scheduled add(const char* job, nlohmann::json payload, std::chrono::seconds in = 3h,
                std::optional<std::string> group = std::nullopt) {
    return client.schedule({.job = job, .entity_name = "orders", .entity_key = "1", .group_key = std::move(group), .in = in,
                            .payload = std::move(payload)});
  }

  SlotReport fire(const char* slot, int workers = 1) {
    clock.set(parse_time(slot));
    return runner(workers).run_slot(parse_time(slot));
  }
};

}  // namespace

TEST_CASE("the seeds' scenario: 10:05 + 3h fires at 13:15, again at 15:15, then done") {
  RunnerFixture f;
  *f.db << "CREATE SCHEMA shop";
  *f.db << "CREATE TABLE shop.orders (id bigint PRIMARY KEY, shipped_at timestamptz)";
  *f.db << "INSERT INTO shop.orders VALUES (42, NULL)";
  const Scheduled check = f.client.schedule({.job = "order_unshipped", .entity_name = "orders", .entity_key = "42",
                                             .job_key = "order_unshipped:42", .in = 3h,
                                             .payload = {{"recheck_after", "2h"}}});
  CHECK(format_time(*check.next_check_at) == "2026-11-21T13:15:00Z");

  CHECK(f.fire("2026-11-21T13:00:00Z").claimed == 0);
  const SlotReport first = f.fire("2026-11-21T13:15:00Z");
  CHECK(first.claimed == 1);
  CHECK(first.rescheduled == 1);
  CHECK(first.events == 1);
  CHECK(f.fire("2026-11-21T13:30:00Z").claimed == 0);
  const auto pending = Checks(*f.db).pending({.job_key = "order_unshipped:42"});
  REQUIRE(pending.size() == 1);
  CHECK(format_time(pending[0].next_check_at) == "2026-11-21T15:15:00Z");
  CHECK(pending[0].check_count == 1);

  *f.db << "UPDATE shop.orders SET shipped_at = now() WHERE id = 42";
  const SlotReport second = f.fire("2026-11-21T15:15:00Z");
  CHECK(second.done == 1);
  CHECK(second.events == 0);
  const auto history = Checks(*f.db).history({.job_key = "order_unshipped:42"});
  REQUIRE(history.size() == 1);
  CHECK(history[0].outcome == Outcome::done);
  CHECK(history[0].check_count == 2);
  CHECK(format_time(history[0].last_check_at) == "2026-11-21T15:15:00Z");
  CHECK(history[0].finished_by == "r1");
  std::string event_id, type, payload;
  *f.db << "SELECT id, type, payload::text FROM prescient.event", soci::into(event_id), soci::into(type),
      soci::into(payload);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.event") == 1);
  CHECK(event_id == std::to_string(check.id) + "-1");
  CHECK(type == "order.unshipped");
  CHECK(nlohmann::json::parse(payload) == nlohmann::json{{"order", 42}, {"check", 1}});
}

TEST_CASE("every guard and retry outcome leaves its history row") {
  RunnerFixture f;
  const auto done = f.add("scripted", nlohmann::json::object());
  const auto later = f.add("scripted", {{"next_in", 3600}});
  const auto past = f.add("scripted", {{"next_at", "2026-11-21T12:00:00Z"}});
  const auto same_slot = f.add("scripted", {{"next_in", 0}});
  const auto horizon = f.add("scripted", {{"next_in", 400 * 86400}});
  const auto max_checks = f.add("once", {{"next_in", 3600}});
  const auto failing = f.add("scripted", {{"throw", "boom"}});
  *f.db << "INSERT INTO prescient.future_job (job, entity_name, entity_key, first_check_at, next_check_at,"
           " enqueued_on, enqueued_by) VALUES ('vanished', 'orders', '9', prescient.at_us(:t), prescient.at_us(:t),"
           " now(), 'other-tool')",
      soci::use(to_unix_micros(parse_time("2026-11-21T13:15:00Z")), "t");

  const SlotReport r = f.fire("2026-11-21T13:15:00Z");
  CHECK(r.claimed == 8);
  CHECK(r.done == 1);
  CHECK(r.rescheduled == 2);
  CHECK(r.guarded == 3);
  CHECK(r.retried == 2);
  Checks store(*f.db);
  const auto ended = [&](std::int64_t id) {
    const auto rows = store.history({.id = id});
    REQUIRE(rows.size() == 1);
    return rows[0];
  };
  CHECK(ended(done.id).outcome == Outcome::done);
  CHECK_FALSE(ended(done.id).last_error);
  // Each guard says why: the answer, the bound, the rule.
  CHECK(ended(past.id).outcome == Outcome::guard_past);
  CHECK(ended(past.id).last_error ==
        "answered 2026-11-21T12:00:00Z, not after the time this run was asked for (2026-11-21T13:05:00Z): a next "
        "time must advance");
  CHECK(ended(horizon.id).outcome == Outcome::guard_horizon);
  CHECK_THAT(ended(horizon.id).last_error.value_or(""), Catch::StartsWith("answered 2027-12-26T13:15:00Z, beyond the horizon"));
  CHECK(ended(max_checks.id).outcome == Outcome::guard_max_checks);
  CHECK_THAT(ended(max_checks.id).last_error.value_or(""), Catch::Contains("max_checks is 1"));
  const auto moved = store.pending({.id = later.id});
  REQUIRE(moved.size() == 1);
  CHECK(format_time(moved[0].next_check_at) == "2026-11-21T14:15:00Z");
  CHECK(moved[0].check_count == 1);
  // Its own slot, after the 13:05 it was asked for: it advanced, so it looks again at the next boundary.
  const auto again = store.pending({.id = same_slot.id});
  REQUIRE(again.size() == 1);
  CHECK(format_time(again[0].next_check_at) == "2026-11-21T13:30:00Z");

  // The failing check: retried with backoff on the grid, then failed, with its error kept.
  auto failing_row = store.pending({.id = failing.id});
  REQUIRE(failing_row.size() == 1);
  CHECK(failing_row[0].attempts == 1);
  CHECK(failing_row[0].last_error == "boom");
  CHECK(format_time(failing_row[0].next_check_at) == "2026-11-21T13:30:00Z");
  const auto vanished = store.pending({.job = "vanished"});
  REQUIRE(vanished.size() == 1);
  CHECK_THAT(*vanished[0].last_error, Catch::Contains("unknown job class 'vanished'"));
  for (const char* slot : {"2026-11-21T13:30:00Z", "2026-11-21T14:00:00Z", "2026-11-21T15:00:00Z",
                           "2026-11-21T17:00:00Z"}) {
    INFO(slot);
    CHECK(f.fire(slot).claimed >= 1);
  }
  const auto failed = store.history({.id = failing.id});
  REQUIRE(failed.size() == 1);
  CHECK(failed[0].outcome == Outcome::failed);
  CHECK(failed[0].attempts == 5);
  CHECK(failed[0].last_error == "boom");
  CHECK(store.history({.outcome = Outcome::failed}).size() == 2);  // and the vanished class
  CHECK(f.runs.runs[failing.id] == 5);

  // retry revives a dead letter at the given slot, attempts reset; a second retry is refused.
  const PendingCheck revived = store.revive_failed(failing.id, parse_time("2026-11-21T17:15:00Z"));
  CHECK(revived.attempts == 0);
  CHECK(revived.last_error == "boom");
  CHECK_THROWS_AS(store.revive_failed(failing.id, parse_time("2026-11-21T17:15:00Z")), InvalidInput);
  CHECK_THROWS_AS(store.revive_failed(done.id, parse_time("2026-11-21T17:15:00Z")), NotFound);
}

TEST_CASE("two concurrent retries of one failed check: one revives it, the other is told it is pending") {
  RunnerFixture f;
  *f.db << "UPDATE prescient.settings SET max_attempts = 1";
  const auto failing = f.add("scripted", {{"throw", "boom"}});
  f.fire("2026-11-21T13:15:00Z");
  REQUIRE(Checks(*f.db).history({.id = failing.id}).at(0).outcome == Outcome::failed);
  // The first retry is inside a transaction that has not committed when the second one arrives.
  auto first = connect_to(f.url);
  *first << "BEGIN";
  Checks(*first).revive_failed(failing.id, parse_time("2026-11-21T13:30:00Z"));
  std::exception_ptr second_error;
  std::thread second([&] {
    auto db = connect_to(f.url);
    try {
      Checks(*db).revive_failed(failing.id, parse_time("2026-11-21T13:30:00Z"));
    } catch (...) {
      second_error = std::current_exception();
    }
  });
  wait_until("the second to wait on the first's uncommitted row", 30s, [&] {
    return count_of(*f.db, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                           " AND wait_event_type = 'Lock'") > 0;
  });
  *first << "COMMIT";
  second.join();
  REQUIRE(second_error);
  CHECK_THROWS_WITH(std::rethrow_exception(second_error), Catch::Contains("is pending already"));
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job WHERE id = " + std::to_string(failing.id)) == 1);
}

TEST_CASE("a job that overruns its timeout fails; the other checks of the slot are unaffected") {
  RunnerFixture f;
  // Well past the 1 s timeout plus the executor's 2 s grace, so a loaded machine cannot make it in time.
  const auto slow = f.add("quick", {{"sleep_ms", 6000}});
  std::vector<std::int64_t> others;
  for (int i = 0; i < 5; ++i) others.push_back(f.add("quick", nlohmann::json::object()).id);
  const SlotReport r = f.fire("2026-11-21T13:15:00Z");
  CHECK(r.done == 5);
  CHECK(r.retried == 1);
  Checks store(*f.db);
  const auto row = store.pending({.id = slow.id});
  REQUIRE(row.size() == 1);
  CHECK(row[0].last_error == "did not return within its timeout of 1s");
  for (const auto id : others) CHECK(store.history({.id = id})[0].outcome == Outcome::done);
}

TEST_CASE("refused slots: off the grid, or later than the current slot") {
  RunnerFixture f;
  f.clock.set(parse_time("2026-11-21T13:20:00Z"));
  auto runner = f.runner();
  CHECK_THROWS_WITH(runner.run_slot(parse_time("2026-11-21T13:20:00Z")), Catch::Contains("not on the"));
  CHECK_THROWS_WITH(runner.run_slot(parse_time("2026-11-21T13:30:00Z")), Catch::Contains("nothing fires early"));
  CHECK_NOTHROW(runner.run_slot(parse_time("2026-11-21T13:15:00Z")));
}

TEST_CASE("four runners on one slot with 10 000 checks settle every check exactly once") {
  RunnerFixture f;
  std::vector<ScheduleRequest> requests;
  for (int i = 0; i < 10000; ++i) {
    requests.push_back({.job = i % 2 ? "scripted" : "emit", .entity_name = "orders", .entity_key = std::to_string(i),
                        .in = 3h, .payload = {{"n", i}}});
  }
  f.client.schedule_many(requests);
  f.clock.set(parse_time("2026-11-21T13:15:00Z"));
  std::vector<SlotReport> reports(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      reports[i] = f.runner(2, "0/1", "runner-" + std::to_string(i)).run_slot(parse_time("2026-11-21T13:15:00Z"));
    });
  }
  for (auto& t : threads) t.join();
  long claimed = 0;
  for (const auto& r : reports) claimed += r.claimed;
  CHECK(claimed == 10000);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.job_history") == 10000);
  CHECK(count_of(*f.db, "SELECT count(DISTINCT id) FROM prescient.job_history") == 10000);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == 0);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.event") == 5000);
  CHECK(f.runs.runs.size() == 5000);
  for (const auto& [id, n] : f.runs.runs) REQUIRE(n == 1);
  // More than one runner took part (the work was shared, not serialized behind one).
  CHECK(count_of(*f.db, "SELECT count(DISTINCT finished_by) FROM prescient.job_history") > 1);
}

TEST_CASE("two shards over 8 consecutive slots: each runs only its own") {
  RunnerFixture f;
  for (int s = 0; s < 8; ++s) {
    for (int i = 0; i < 10; ++i) f.add("noop", nlohmann::json::object(), 3h + std::chrono::minutes(15 * s));
  }
  TimePoint slot = parse_time("2026-11-21T13:15:00Z");
  f.clock.set(slot + 8 * 15min);
  auto shard0 = f.runner(1, "0/2", "shard-0");
  auto shard1 = f.runner(1, "1/2", "shard-1");
  const SlotGrid grid{900s};
  for (int s = 0; s < 8; ++s, slot += 15min) {
    const SlotReport a = shard0.run_slot(slot);
    const SlotReport b = shard1.run_slot(slot);
    INFO(format_time(slot));
    CHECK(a.owned != b.owned);
    CHECK(a.claimed + b.claimed == 10);
    const std::string owner = grid.shard_of(slot, 2) == 0 ? "shard-0" : "shard-1";
    CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.job_history WHERE finished_by = '" + owner +
                              "' AND last_check_at = prescient.at_us(" + std::to_string(to_unix_micros(slot)) + ")") == 10);
  }
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == 0);
}

TEST_CASE("groups: 100 groups of 5 over 4 runners, never two of a group at once, each group in one call") {
  RunnerFixture f;
  std::vector<ScheduleRequest> requests;
  for (int g = 0; g < 100; ++g) {
    for (int i = 0; i < 5; ++i) {
      requests.push_back({.job = "grouped", .entity_name = "users", .entity_key = std::to_string(g),
                          .group_key = "user:" + std::to_string(g), .in = 3h});
    }
  }
  f.client.schedule_many(requests);
  f.clock.set(parse_time("2026-11-21T13:15:00Z"));
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      f.runner(1, "0/1", "runner-" + std::to_string(i)).run_slot(parse_time("2026-11-21T13:15:00Z"));
    });
  }
  for (auto& t : threads) t.join();
  CHECK(f.groups.overlaps == 0);
  REQUIRE(f.groups.calls.size() == 100);
  for (const auto& [group, calls] : f.groups.calls) {
    INFO(group);
    CHECK(calls == 1);
    CHECK(f.groups.checks[group] == 5);
  }
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.job_history WHERE outcome = 'done'") == 500);
}

TEST_CASE("a claim reads every field of the row exactly, whatever another tool wrote into it") {
  RunnerFixture f;
  // Read in binary: a time before 2000 is negative on PostgreSQL's epoch, texts arrive unescaped.
  *f.db << "INSERT INTO prescient.future_job (job, entity_name, entity_key, job_key, group_key, payload,"
           " first_check_at, next_check_at, check_count, attempts, enqueued_on, enqueued_by)"
           " VALUES ('scripted', 'o\"r''d;e\\rs', 'k\u00e9y \u2603', 'a,{b}', NULL,"
           " '{\"s\": \"\\u00e9\\\"\\\\\", \"n\": -3.5, \"big\": 9007199254740993}',"
           " '1999-12-31T23:59:59.999999Z', '2026-11-21T10:00:00Z', 4, 2, now(), 'other tool')";
  const TimePoint slot = parse_time("2026-11-21T10:00:00Z");
  PgRunnerStore store(*f.db);
  store.begin();
  const std::vector<Check> claimed = store.claim_due(slot, slot, f.clock.now(), 10, {}, std::nullopt).checks;
  store.rollback();
  REQUIRE(claimed.size() == 1);
  const Check& c = claimed.front();
  CHECK(c.job == "scripted");
  CHECK(c.entity_name == "o\"r'd;e\\rs");
  CHECK(c.entity_key == "k\u00e9y \u2603");
  CHECK(c.job_key == std::optional<std::string>("a,{b}"));
  CHECK_FALSE(c.group_key.has_value());
  CHECK(c.payload == nlohmann::json{{"s", "\u00e9\"\\"}, {"n", -3.5}, {"big", 9007199254740993LL}});
  CHECK(format_time(c.first_check_at) == "1999-12-31T23:59:59.999999Z");
  CHECK(c.slot == slot);
  CHECK(c.check_count == 4);
  CHECK(c.attempts == 2);
}

TEST_CASE("a claim after a place in claim order takes only the rows after it, and says where it ended") {
  RunnerFixture f;
  const TimePoint slot = parse_time("2026-11-21T10:00:00Z");
  // Claim order is due time, priority, id: b (priority 0), a, c (priority 5, by id), d (priority 9).
  for (const auto& [key, priority] : {std::pair{"a", 5}, {"b", 0}, {"c", 5}, {"d", 9}}) {
    *f.db << "INSERT INTO prescient.future_job (job, entity_name, entity_key, first_check_at, next_check_at,"
             " enqueued_on, enqueued_by, priority) VALUES ('scripted', 'e', :key, '2026-11-21T10:00:00Z',"
             " '2026-11-21T10:00:00Z', now(), 'test', :priority)",
        soci::use(std::string(key)), soci::use(priority);
  }
  const auto id_of = [&](const std::string& key) {
    return count_of(*f.db, "SELECT id FROM prescient.future_job WHERE entity_key = '" + key + "'");
  };
  const auto keys = [](const RunnerStore::Claimed& c) {
    std::string out;
    for (const Check& check : c.checks) out += check.entity_key;
    return out;
  };
  PgRunnerStore store(*f.db);
  store.begin();
  const RunnerStore::Claimed first = store.claim_due(slot, slot, f.clock.now(), 2, {}, std::nullopt);
  CHECK(keys(first) == "ba");
  REQUIRE(first.last);
  CHECK(*first.last == ClaimKey{.due = slot, .priority = 5, .id = id_of("a")});
  store.rollback();
  store.begin();  // the first two given back: only the place keeps the next claim off them
  const RunnerStore::Claimed next = store.claim_due(slot, slot, f.clock.now(), 10, {}, first.last);
  CHECK(keys(next) == "cd");
  CHECK(next.last == std::optional(ClaimKey{.due = slot, .priority = 9, .id = id_of("d")}));
  CHECK(store.claim_due(slot, slot, f.clock.now(), 10, {}, next.last).empty());
  store.rollback();
}

TEST_CASE("an empty slot touches nothing; the claim is an index lookup, not a scan") {
  RunnerFixture f;
  std::vector<ScheduleRequest> elsewhere;
  for (int i = 0; i < 20000; ++i) {
    elsewhere.push_back({.job = "noop", .entity_name = "e", .entity_key = std::to_string(i),
                         .in = std::chrono::hours(1 + i % 5000)});
  }
  f.client.schedule_many(elsewhere);
  *f.db << "ANALYZE prescient.future_job";
  const SlotReport r = f.fire("2026-11-21T10:00:00Z");
  CHECK(r.claimed == 0);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == 20000);
  const std::string plan = PgRunnerStore(*f.db).claim_plan(parse_time("2026-11-21T10:00:00Z"), f.clock.now());
  INFO(plan);
  CHECK_THAT(plan, Catch::Contains("Index Scan using future_job_due"));
  CHECK_THAT(plan, !Catch::Contains("Seq Scan on future_job"));
  // The paused classes are read once per claim (a hashed subplan on a table of a few rows).
  CHECK_THAT(plan, Catch::Contains("hashed SubPlan"));
}

TEST_CASE("sweep runs missed slots oldest first, or shifts them to the next boundary") {
  RunnerFixture f;
  for (int s = 0; s < 3; ++s) f.add("scripted", nlohmann::json::object(), 3h + std::chrono::minutes(15 * s));
  for (int s = 0; s < 2; ++s) f.add("noop", nlohmann::json::object(), 5h + std::chrono::minutes(15 * s));
  f.clock.set(parse_time("2026-11-21T20:07:00Z"));  // the runner was down all afternoon
  auto runner = f.runner();
  const SlotReport swept = runner.sweep(parse_time("2026-11-21T15:15:00Z"), SweepMode::run);
  CHECK(swept.claimed == 3);
  CHECK(swept.done == 3);
  const SlotReport shifted = runner.sweep(parse_time("2026-11-21T20:00:00Z"), SweepMode::shift);
  CHECK(shifted.shifted == 2);
  const auto left = Checks(*f.db).pending({});
  REQUIRE(left.size() == 2);
  for (const auto& c : left) CHECK(format_time(c.next_check_at) == "2026-11-21T20:15:00Z");
  CHECK_THROWS_WITH(runner.sweep(parse_time("2026-11-21T20:15:00Z"), SweepMode::run),
                    Catch::Contains("nothing fires early"));
}

TEST_CASE("a runner killed mid-slot loses nothing; a consumer following events gets every event once") {
  const std::string url = create_migrated_database(1);
  auto db = connect_to(url);
  // 600 checks of 5 ms each: about 3 s of work for one worker, killed after 1 s.
  const SystemClock clock;
  const TimePoint slot = SlotGrid{1s}.floor(clock.now()) - 60s;
  ManualClock then{slot - 10s};
  Client client(*db, {.clock = &then});
  std::vector<ScheduleRequest> requests;
  for (int i = 0; i < 600; ++i) {
    requests.push_back({.job = "sleepy", .entity_name = "e", .entity_key = std::to_string(i), .at = slot,
                        .payload = {{"sleep_ms", 5}}});
  }
  client.schedule_many(requests);
  const std::string slot_text = format_time(slot);
  // Someone follows the outbox all along, and its connection is cut once on the way.
  const std::string followed = "/tmp/prescient-follow-" + std::to_string(::getpid());
  const pid_t follower = start_prescient({"events", "--follow", "--json", "--db", url}, followed);
  const pid_t runner = start_prescient({"run-slot", "--slot", slot_text, "--db", url, "--workers", "1", "--batch", "50",
                                        "--plugins", PRESCIENT_TEST_PLUGINS});
  wait_until("the runner to settle its first batch", 30s,
             [&] { return count_of(*db, "SELECT count(*) FROM prescient.job_history") > 0; });
  REQUIRE(::kill(runner, SIGKILL) == 0);
  REQUIRE(wait_for(runner) == 128 + SIGKILL);
  const long long settled_before = count_of(*db, "SELECT count(*) FROM prescient.job_history");
  CHECK(settled_before > 0);
  CHECK(settled_before < 600);  // it really died mid-slot
  CHECK(count_of(*db, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                      " WHERE query LIKE '%FROM prescient.event%' AND pid <> pg_backend_pid()") >= 1);

  // The killed runner's open batch rolled back: its checks are due again at once.
  CHECK(wait_for(start_prescient({"run-slot", "--slot", slot_text, "--db", url, "--plugins", PRESCIENT_TEST_PLUGINS})) == 0);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history") == 600);
  CHECK(count_of(*db, "SELECT count(DISTINCT id) FROM prescient.job_history") == 600);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job") == 0);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.event") == 600);
  CHECK(count_of(*db, "SELECT count(DISTINCT payload->>'id') FROM prescient.event") == 600);

  // The follower printed every event exactly once, then stops cleanly on SIGTERM.
  std::set<std::string> seen;
  std::size_t lines = 0;
  for (int i = 0; i < 100 && lines < 600; ++i) {
    std::this_thread::sleep_for(100ms);
    std::ifstream in(followed);
    seen.clear();
    lines = 0;
    for (std::string line; std::getline(in, line); ++lines) seen.insert(nlohmann::json::parse(line)["id"]);
  }
  CHECK(lines == 600);
  CHECK(seen.size() == 600);
  REQUIRE(::kill(follower, SIGTERM) == 0);
  CHECK(wait_for(follower) == 0);
  ::unlink(followed.c_str());
}

namespace {

// Jumps the manual clock to each boundary at once; stops the daemon after `budget` waits.
class JumpingWaiter final : public Waiter {
 public:
  JumpingWaiter(ManualClock& clock, int budget) : clock_(clock), budget_(budget) {}
  bool wait_until(TimePoint t) override {
    if (stopped() || --budget_ < 0) {
      stop();
      return false;
    }
    if (clock_.now() < t) clock_.set(t + 250ms);  // a little late, as a real wake-up is
    return true;
  }

 private:
  ManualClock& clock_;
  int budget_;
};

}  // namespace

TEST_CASE("the daemon sweeps what it missed, then fires each slot at its boundary, never early") {
  RunnerFixture f;
  f.add("scripted", nlohmann::json::object(), 10min);            // 10:15, missed: the daemon starts at 10:50
  const auto repeating = f.add("scripted", {{"next_in", 1800}}, 1h);  // 11:15, 11:45, then 12:15
  for (int i = 0; i < 20; ++i) f.add("emit", {{"type", "tick"}}, 1h + std::chrono::minutes(15 * (i % 4)));
  f.clock.set(parse_time("2026-11-21T10:50:00Z"));
  JumpingWaiter waiter(f.clock, 6);  // 10:45 (current), then 11:00 .. 12:00
  Daemon daemon({.database_url = f.url, .runner_id = "daemon-1"}, f.registry, f.clock, waiter);
  const DaemonStats stats = daemon.run();
  CHECK(stats.errors == 0);
  CHECK(stats.slots == 6);
  const auto left = Checks(*f.db).pending({});
  REQUIRE(left.size() == 1);
  CHECK(left[0].id == repeating.id);
  CHECK(left[0].check_count == 2);
  CHECK(format_time(left[0].next_check_at) == "2026-11-21T12:15:00Z");
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.job_history WHERE outcome = 'done'") == 21);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.event") == 20);
  // Nothing ran before its slot: every settlement happened at or after the slot it was due at.
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.job_history WHERE finished_at < last_check_at") == 0);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.job_history WHERE finished_by <> 'daemon-1'") == 0);
}

TEST_CASE("the daemon process stops on SIGTERM with exit 0 after firing what was due") {
  const std::string url = create_migrated_database(1);
  auto db = connect_to(url);
  Client client(*db);
  for (int i = 0; i < 50; ++i) {
    client.schedule({.job = "noop", .entity_name = "e", .entity_key = std::to_string(i), .in = std::chrono::seconds{0}});
  }
  const pid_t pid = start_prescient({"daemon", "--db", url});
  // The checks are due at the next second's boundary; give the daemon up to 5 s to fire them.
  for (int i = 0; i < 50 && count_of(*db, "SELECT count(*) FROM prescient.future_job") > 0; ++i) {
    std::this_thread::sleep_for(100ms);
  }
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job") == 0);
  REQUIRE(::kill(pid, SIGTERM) == 0);
  CHECK(wait_for(pid) == 0);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history WHERE outcome = 'done'") == 50);
}

TEST_CASE("the sql class calls the named function with key, payload and count; its answer decides") {
  RunnerFixture f;
  *f.db << "CREATE SCHEMA app";
  *f.db << "CREATE TABLE app.calls (entity_key text, payload jsonb, check_count int)";
  *f.db << "CREATE FUNCTION app.check_order(k text, p jsonb, n integer) RETURNS timestamptz LANGUAGE sql AS $$"
           " INSERT INTO app.calls VALUES (k, p, n);"
           " SELECT CASE WHEN n = 0 THEN timestamptz '2026-11-21T14:00:00Z' END $$";
  *f.db << "CREATE FUNCTION app.slow(k text, p jsonb, n integer) RETURNS timestamptz LANGUAGE sql AS $$"
           " SELECT pg_sleep(5); SELECT NULL::timestamptz $$";
  *f.db << "CREATE FUNCTION app.wrong_type(k text, p jsonb, n integer) RETURNS int LANGUAGE sql AS $$ SELECT 1 $$";
  *f.db << "UPDATE prescient.settings SET job_timeout_seconds = 1";
  const auto good = f.add("sql", {{"function", "app.check_order"}, {"x", "it's"}});
  const auto injected = f.add("sql", {{"function", "app.check_order(); DROP TABLE app.calls; --"}});
  const auto missing = f.add("sql", {{"function", "app.nope"}});
  const auto wrong = f.add("sql", {{"function", "app.wrong_type"}});
  const auto slow = f.add("sql", {{"function", "app.slow"}});
  const SlotReport first = f.fire("2026-11-21T13:15:00Z");
  CHECK(first.rescheduled == 1);
  CHECK(first.retried == 4);
  Checks store(*f.db);
  CHECK(format_time(store.pending({.id = good.id})[0].next_check_at) == "2026-11-21T14:00:00Z");
  CHECK_THAT(*store.pending({.id = injected.id})[0].last_error, Catch::Contains("schema.name"));
  CHECK_THAT(*store.pending({.id = missing.id})[0].last_error, Catch::Contains("no function app.nope"));
  CHECK_THAT(*store.pending({.id = wrong.id})[0].last_error, Catch::Contains("must return timestamptz"));
  CHECK_THAT(*store.pending({.id = slow.id})[0].last_error,
             Catch::Contains("statement timeout"));
  CHECK(count_of(*f.db, "SELECT count(*) FROM app.calls") == 1);  // the table survived, one call
  CHECK(f.fire("2026-11-21T14:00:00Z").done == 1);
  std::string calls;
  *f.db << "SELECT string_agg(entity_key || ':' || (payload->>'x') || ':' || check_count, ',' ORDER BY check_count)"
           " FROM app.calls",
      soci::into(calls);
  CHECK(calls == "1:it's:0,1:it's:1");
}

namespace {

std::string make_commands_dir() {
  char templ[] = "/tmp/prescient-commands-XXXXXX";
  const std::string dir = ::mkdtemp(templ);
  const auto script = [&](const std::string& name, const std::string& body, bool executable = true) {
    const std::string path = dir + "/" + name;
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    ::chmod(path.c_str(), executable ? 0755 : 0644);
  };
  script("record", "env | grep -E '^(PRESCIENT_|PATH=|HOME=)' | sort > \"" + dir + "/env-$PRESCIENT_CHECK_ID\"");
  script("later", "echo 2026-11-21T14:00:00Z");
  script("fail", "echo 'warming up' >&2; echo 'disk on fire' >&2; exit 3");
  script("hang", "sleep 30");
  script("babble", "echo soon");
  // Closes its output and keeps running: the pipes are closed long before it exits.
  script("detach", "exec >/dev/null 2>&1; exec sleep 37");
  script("not-executable", "true", false);
  return dir;
}

}  // namespace

TEST_CASE("the command class runs allow-listed executables without a shell, under a written lease") {
  RunnerFixture f;
  const std::string dir = make_commands_dir();
  Registry registry;
  register_builtin_jobs(registry, {.commands_dir = dir});
  *f.db << "UPDATE prescient.settings SET job_timeout_seconds = 1";
  const auto record = f.add("command", {{"command", "record"}, {"note", "it's $HOME; rm -rf /"}});
  const auto later = f.add("command", {{"command", "later"}});
  const auto fail = f.add("command", {{"command", "fail"}});
  const auto hang = f.add("command", {{"command", "hang"}});
  const auto babble = f.add("command", {{"command", "babble"}});
  const auto detach = f.add("command", {{"command", "detach"}});
  const auto escape = f.add("command", {{"command", "../../bin/sh"}});
  const auto plain = f.add("command", {{"command", "not-executable"}});
  f.clock.set(parse_time("2026-11-21T13:15:00Z"));
  SlotRunner runner({.database_url = f.url, .runner_id = "r1"}, registry, f.clock);
  const SlotReport r = runner.run_slot(parse_time("2026-11-21T13:15:00Z"));
  CHECK(r.claimed == 8);
  CHECK(r.done == 1);
  CHECK(r.rescheduled == 1);
  CHECK(r.retried == 6);
  CHECK(r.discarded == 0);
  Checks store(*f.db);
  const auto error_of = [&](std::int64_t id) { return store.pending({.id = id}).at(0).last_error.value_or(""); };
  CHECK(format_time(store.pending({.id = later.id})[0].next_check_at) == "2026-11-21T14:00:00Z");
  CHECK(error_of(fail.id) == "fail exited with 3: disk on fire");
  CHECK(error_of(hang.id) == "hang was killed at the timeout");
  CHECK(error_of(babble.id) == "babble printed 'soon', not a time (or nothing)");
  // Waited for within its timeout, not until it exits; killed with its group.
  CHECK(error_of(detach.id) == "detach was killed at the timeout");
  // The runner stops waiting for a job at the same timeout as the command's own, so on a loaded machine the
  // job's thread may still be killing the group when the slot ends: a moment, not the sleep's 37 seconds.
  wait_until("the detached sleep, killed with its group, to be gone", 5s,
             [] { return std::system("pgrep -f 'slee[p] 37' >/dev/null") != 0; });
  CHECK_THAT(error_of(escape.id), Catch::Contains("plain file name"));
  CHECK_THAT(error_of(plain.id), Catch::Contains("no executable not-executable"));
  // Settled rows carry no lease any more.
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job WHERE claimed_until IS NOT NULL") == 0);
  // The environment is the check, and nothing of the runner's.
  std::ifstream env_file(dir + "/env-" + std::to_string(record.id));
  const std::string env((std::istreambuf_iterator<char>(env_file)), std::istreambuf_iterator<char>());
  CHECK_THAT(env, Catch::Contains("PRESCIENT_ENTITY=orders\n") && Catch::Contains("PRESCIENT_CHECK_COUNT=0\n") &&
                      Catch::Contains("PRESCIENT_SLOT=2026-11-21T13:15:00Z\n") &&
                      Catch::Contains("PATH=/usr/local/bin:/usr/bin:/bin\n") && Catch::Contains("rm -rf /"));
  CHECK_THAT(env, !Catch::Contains("HOME="));

  // Without an allow-listed directory the class refuses.
  const auto refused = f.add("command", {{"command", "later"}}, 1h);  // the clock is at 13:15 now
  f.fire("2026-11-21T14:15:00Z");
  CHECK_THAT(error_of(refused.id), Catch::Contains("--commands DIR"));
}

namespace {

// Long-running (the slow path); {"lose_lease": true} makes its own lease expire while it runs (the first
// time only), as if the runner had stalled past it and another could rescue the check.
class LeaseLoser final : public JobExec {
 public:
  JobPolicy policy() const override { return {.long_running = true}; }
  JobResult run(const Check& check, JobContext& ctx) override {
    static std::atomic<bool> lost{false};
    if (check.payload.value("lose_lease", false) && !lost.exchange(true)) {
      ctx.db() << "UPDATE prescient.future_job SET claimed_until = '2000-01-01Z' WHERE id = :id",
          soci::use(check.id);
    }
    return {};
  }
};

}  // namespace

TEST_CASE("a slow-path batch that lost one lease counts what it settled, and the lost one as discarded") {
  RunnerFixture f;
  f.registry.add("lease_loser", [] { return std::make_unique<LeaseLoser>(); });
  const auto lost = f.add("lease_loser", {{"lose_lease", true}});
  for (int i = 0; i < 3; ++i) f.add("lease_loser", nlohmann::json::object());
  const SlotReport r = f.fire("2026-11-21T13:15:00Z");
  // The lost one's result is discarded; its lease having expired, the same drain rescues and settles it.
  CHECK(r.claimed == 5);
  CHECK(r.done == 4);
  CHECK(r.discarded == 1);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.job_history WHERE outcome = 'done'") == 4);
  CHECK(Checks(*f.db).history({.id = lost.id}).size() == 1);
}

TEST_CASE("a slow-path result after its lease expired is discarded; the expired lease is rescued") {
  RunnerFixture f;
  const auto check = f.add("noop", nlohmann::json::object());
  const TimePoint slot = parse_time("2026-11-21T13:15:00Z");
  f.clock.set(slot);
  PgRunnerStore store(*f.db);
  Checks checks(*f.db);
  // A runner leases the check and dies without settling.
  store.begin();
  const auto claimed = store.claim_due(slot, slot, f.clock.now(), 10, {}, std::nullopt).checks;
  REQUIRE(claimed.size() == 1);
  const std::vector<std::int64_t> ids{check.id};
  const std::int64_t token = store.lease(ids, "dead-runner", slot + 1min);
  store.commit();
  // While the lease is live nobody else takes it.
  CHECK(f.runner().run_slot(slot).claimed == 0);
  const SettleItem item{.id = check.id, .due = slot, .check = {.job = "noop", .slot = slot, .asked_for = slot}};  // done
  const runner::Judging judging{.slot = 900s, .max_horizon = 365 * 24h};
  // A wrong token settles nothing, even in time.
  store.begin();
  CHECK(store.settle({&item, 1}, "impostor", slot + 30s, token + 1, judging, false).counts.checks == 0);
  store.commit();
  // The dead runner comes back after its lease expired: discarded.
  f.clock.set(slot + 2min);
  store.begin();
  CHECK(store.settle({&item, 1}, "dead-runner", f.clock.now(), token, judging, false).counts.checks == 0);
  store.commit();
  CHECK(checks.pending({.id = check.id}).size() == 1);
  // The sweep the daemon runs after each slot takes it again.
  f.clock.set(slot + 15min);
  const SlotReport rescued = f.runner().sweep(slot + 15min, SweepMode::run);
  CHECK(rescued.claimed == 1);
  CHECK(rescued.done == 1);
  CHECK(checks.history({.id = check.id})[0].finished_by == "r1");
}

namespace {

// Writes a row per check through the context; {"throw": ...} fails after writing, {"bad_sql": true}
// asks for a write that cannot succeed.
class Writer final : public JobExec {
 public:
  JobResult run(const Check& check, JobContext& ctx) override {
    ctx.write("INSERT INTO app.log (check_id, note) VALUES ($1, $2)", {std::to_string(check.id), "it's written"});
    if (check.payload.contains("bad_sql")) ctx.write("INSERT INTO app.missing VALUES (1)");
    if (check.payload.contains("throw")) throw std::runtime_error("after writing");
    return {.next = std::nullopt, .events = {{.type = "wrote"}}};
  }
};

}  // namespace

TEST_CASE("writes through the job context commit exactly with the settlement, or not at all") {
  RunnerFixture f;
  f.registry.add("writer", [] { return std::make_unique<Writer>(); });
  *f.db << "CREATE SCHEMA app";
  *f.db << "CREATE TABLE app.log (check_id bigint, note text)";
  std::vector<std::int64_t> good;
  for (int i = 0; i < 5; ++i) good.push_back(f.add("writer", nlohmann::json::object()).id);
  const auto thrower = f.add("writer", {{"throw", true}});
  const auto bad = f.add("writer", {{"bad_sql", true}});
  const SlotReport r = f.fire("2026-11-21T13:15:00Z");
  CHECK(r.done == 5);
  CHECK(r.retried == 2);
  CHECK(r.events == 5);
  CHECK(count_of(*f.db, "SELECT count(*) FROM app.log") == 5);
  CHECK(count_of(*f.db, "SELECT count(DISTINCT check_id) FROM app.log") == 5);
  CHECK(count_of(*f.db, "SELECT count(*) FROM app.log WHERE check_id IN (" + std::to_string(thrower.id) + ", " +
                            std::to_string(bad.id) + ")") == 0);
  Checks store(*f.db);
  CHECK(store.pending({.id = thrower.id})[0].last_error == "after writing");
  CHECK_THAT(*store.pending({.id = bad.id})[0].last_error, Catch::Contains("app.missing"));
  // A rerun of the slot finds nothing to do and writes nothing more.
  CHECK(f.fire("2026-11-21T13:15:00Z").claimed == 0);
  CHECK(count_of(*f.db, "SELECT count(*) FROM app.log") == 5);
}

TEST_CASE("a daemon whose first sweep fails starts again from the beginning, firing no slot meanwhile") {
  RunnerFixture f;
  // A role that may read the settings (the runner is made) but not the checks (its first sweep fails).
  const std::string role = "prescient_t" + std::to_string(::getpid()) + "_nosweep";
  *f.db << "CREATE ROLE " + role + " LOGIN";
  *f.db << "GRANT USAGE ON SCHEMA prescient TO " + role;
  *f.db << "GRANT SELECT ON prescient.settings TO " + role;
  f.add("noop", nlohmann::json::object(), 10min);
  JumpingWaiter waiter(f.clock, 3);
  Daemon daemon({.database_url = prescient::testing::with_connection_option(f.url, "user", role), .runner_id = "d"},
                f.registry, f.clock, waiter);
  const DaemonStats stats = daemon.run();
  *f.db << "DROP OWNED BY " + role;
  *f.db << "DROP ROLE " + role;
  // Each try failed at the start and was retried as a start: no slot was fired (before, the daemon went
  // on from a slot it never set).
  CHECK(stats.errors >= 2);
  CHECK(stats.slots == 0);
  CHECK(stats.slot_retries == 0);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == 1);
}

TEST_CASE("the daemon also runs rows written off the grid by other tools: nothing is left behind") {
  RunnerFixture f;
  f.clock.set(parse_time("2026-11-21T10:50:00Z"));
  // Another tool writes a check at 11:07:13, off the 15-minute grid: no slot equals it.
  *f.db << "INSERT INTO prescient.future_job (job, entity_name, entity_key, first_check_at, next_check_at,"
           " enqueued_on, enqueued_by) VALUES ('noop', 'orders', '9', prescient.at_us(:t), prescient.at_us(:t),"
           " now(), 'other-tool')",
      soci::use(to_unix_micros(parse_time("2026-11-21T11:07:13Z")), "t");
  JumpingWaiter waiter(f.clock, 4);  // 10:45, 11:00, 11:15, 11:30
  Daemon daemon({.database_url = f.url, .runner_id = "daemon-1"}, f.registry, f.clock, waiter);
  daemon.run();
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == 0);
  const auto done = Checks(*f.db).history({.entity_key = "9"});
  REQUIRE(done.size() == 1);
  CHECK(done[0].outcome == Outcome::done);
  CHECK(done[0].finished_at >= parse_time("2026-11-21T11:07:13Z"));  // never early
}

TEST_CASE("a paused class: its checks stay pending across slots; resumed, they fire at the next slot; others run") {
  RunnerFixture f;
  for (int i = 0; i < 3; ++i) f.add("noop", {{"i", i}}, 10min);  // due at 10:15
  f.add("emit", {{"type", "t"}}, 10min);
  Checks checks(*f.db);
  CHECK(checks.pause_job("noop", "ops", f.clock.now()));
  CHECK_FALSE(checks.pause_job("noop", "ops", f.clock.now()));  // paused already

  const SlotReport at_1015 = f.fire("2026-11-21T10:15:00Z", 2);
  CHECK(at_1015.claimed == 1);  // the emit check only
  CHECK(at_1015.events == 1);
  // Still pending, and a later slot or a sweep does not take them either.
  f.clock.set(parse_time("2026-11-21T10:45:00Z"));
  CHECK(f.runner().sweep(parse_time("2026-11-21T10:45:00Z"), SweepMode::run).claimed == 0);
  CHECK(checks.pending({.job = "noop"}).size() == 3);

  CHECK(checks.resume_job("noop"));
  CHECK_FALSE(checks.resume_job("noop"));
  // At the next boundary the daemon sweeps what fell due meanwhile: all three run once.
  f.clock.set(parse_time("2026-11-21T11:00:00Z"));
  const SlotReport resumed = f.runner(2).sweep(parse_time("2026-11-21T11:00:00Z"), SweepMode::run);
  CHECK(resumed.claimed == 3);
  CHECK(resumed.done == 3);
  CHECK(checks.pending({.job = "noop"}).empty());
}

namespace {

// Moves the manual clock to each time the daemon waits for, calling `at_each` with it first; stops the
// daemon at its first wait for `stop_at` or later.
class WalkingWaiter final : public Waiter {
 public:
  WalkingWaiter(ManualClock& clock, TimePoint stop_at, std::function<void(TimePoint)> at_each)
      : clock_(clock), stop_at_(stop_at), at_each_(std::move(at_each)) {}
  bool wait_until(TimePoint t) override {
    if (stopped() || t >= stop_at_) {
      stop();
      return false;
    }
    at_each_(t);
    if (clock_.now() < t) clock_.set(t);
    return true;
  }

 private:
  ManualClock& clock_;
  TimePoint stop_at_;
  std::function<void(TimePoint)> at_each_;
};

}  // namespace

TEST_CASE("the daemon runs at once what a resume or a lease's end makes claimable, in its own slot") {
  RunnerFixture f;  // a 15-minute grid
  for (int i = 0; i < 3; ++i) f.add("noop", {{"i", i}}, 10min);  // due at 10:15
  const Scheduled held = f.add("emit", {{"type", "t"}}, 10min);   // due at 10:15, leased by a runner that died
  Checks checks(*f.db);
  REQUIRE(checks.pause_job("noop", "ops", f.clock.now()));
  *f.db << "UPDATE prescient.future_job SET claimed_by = 'gone', claim_token = 1,"
           " claimed_until = '2026-11-21T10:20:00Z' WHERE id = :id", soci::use(held.id);
  f.clock.set(parse_time("2026-11-21T10:15:00Z"));
  bool resumed = false;
  WalkingWaiter waiter(f.clock, parse_time("2026-11-21T10:30:00Z"), [&](TimePoint t) {
    if (!resumed && t >= parse_time("2026-11-21T10:17:00Z")) resumed = checks.resume_job("noop");
  });
  Daemon daemon({.database_url = f.url, .runner_id = "daemon-1"}, f.registry, f.clock, waiter);
  daemon.run();
  CHECK(resumed);
  // Resumed at 10:17, the three ran then, not at the 10:30 boundary; the dead runner's lease ended at
  // 10:20, and its check ran then. All in their own slot, none early.
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.job_history WHERE job = 'noop' AND outcome = 'done'"
                        " AND finished_at >= '2026-11-21T10:17:00Z' AND finished_at < '2026-11-21T10:18:00Z'") == 3);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.job_history WHERE job = 'emit' AND outcome = 'done'"
                        " AND finished_at >= '2026-11-21T10:20:00Z' AND finished_at < '2026-11-21T10:21:00Z'") == 1);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == 0);
}

TEST_CASE("a paused class of grouped checks: the group claim leaves them out too") {
  RunnerFixture f;
  for (int i = 0; i < 2; ++i) f.add("grouped", {{"i", i}}, 10min, "user-1");
  Checks checks(*f.db);
  CHECK(checks.pause_job("grouped", "ops", f.clock.now()));
  CHECK(f.fire("2026-11-21T10:15:00Z").claimed == 0);
  CHECK(checks.pending({.job = "grouped"}).size() == 2);
  CHECK(checks.resume_job("grouped"));
  f.clock.set(parse_time("2026-11-21T10:30:00Z"));
  CHECK(f.runner().sweep(parse_time("2026-11-21T10:30:00Z"), SweepMode::run).claimed == 2);
  CHECK(f.groups.calls["user-1"] == 1);  // one run_group call for the whole group
}
