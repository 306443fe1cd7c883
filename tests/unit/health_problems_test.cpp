// doctor's judgement: which figures of the database's health are problems, and what it says to do about each.
#include <catch2/catch.hpp>

#include "prescient/health_problems.hpp"
#include "prescient/time_text.hpp"

using namespace prescient;
using namespace std::chrono_literals;

namespace {

const TimePoint kNow = parse_time("2026-11-27T12:00:00Z");

HorizonHolder session(long long pid, const char* state, std::chrono::seconds held) {
  return {.kind = "session", .pid = pid, .application_name = "report", .state = state,
          .backend_type = "client backend", .held_since = kNow - held, .held_xmin = "1000", .xid_age = 50};
}

std::string all_of(const std::vector<HealthProblem>& problems) {
  std::string out;
  for (const HealthProblem& p : problems) out += p.subject + ": " + p.finding + " => " + p.advice + "\n";
  return out;
}

}  // namespace

TEST_CASE("doctor: a session idle in transaction past the limit is named, with how to end it") {
  DatabaseHealth health{.now = kNow};
  health.holders = {session(1234, "idle in transaction", 14min), session(99, "active", 10s)};
  const auto problems = health_problems(health, HealthLimits{});
  INFO(all_of(problems));
  REQUIRE(problems.size() == 1);  // the active one is within the limit
  CHECK(problems[0].subject == "horizon");
  CHECK_THAT(problems[0].finding, Catch::StartsWith("session pid 1234 (app 'report', idle in transaction) holds xmin "
                                                    "1000, 50 transactions behind") &&
                                      Catch::Contains("(14m)"));
  CHECK_THAT(problems[0].advice, Catch::Contains("pg_terminate_backend(1234)") &&
                                     Catch::Contains("idle_in_transaction_session_timeout"));
  CHECK(health_problems(health, {.horizon_age = 15min}).empty());
}

TEST_CASE("doctor: holders without a pid or a start are judged by transactions behind, and named") {
  DatabaseHealth health{.now = kNow};
  health.holders = {
      {.kind = "replication_slot", .name = "gone's slot", .state = "inactive", .held_xmin = "7", .xid_age = 2'000'000},
      {.kind = "replication_slot", .pid = 77, .name = "standby1", .state = "active", .held_xmin = "8", .xid_age = 1'500'000},
      {.kind = "prepared_transaction", .name = "tx'1", .held_since = kNow - 1h, .held_xmin = "9", .xid_age = 10},
      {.kind = "standby", .pid = 88, .application_name = "replica-a", .state = "streaming", .held_xmin = "10",
       .xid_age = 1'200'000},
      {.kind = "replication_slot_catalog", .name = "cdc", .state = "inactive", .held_xmin = "11", .xid_age = 3'000'000,
       .holds_tables = false},
      {.kind = "standby", .pid = 89, .held_xmin = "12", .xid_age = 10},  // young: no problem
  };
  const auto problems = health_problems(health, HealthLimits{});
  INFO(all_of(problems));
  REQUIRE(problems.size() == 5);
  CHECK_THAT(problems[0].advice, Catch::Contains("SELECT pg_drop_replication_slot('gone''s slot')"));
  CHECK_THAT(problems[1].advice, Catch::Contains("its consumer (pid 77) is not keeping up"));
  CHECK_THAT(problems[2].finding, Catch::StartsWith("prepared transaction 'tx'1'"));
  CHECK_THAT(problems[2].advice, Catch::Contains("COMMIT PREPARED 'tx''1' or ROLLBACK PREPARED 'tx''1'"));
  CHECK_THAT(problems[3].advice, Catch::Contains("hot_standby_feedback"));
  CHECK_THAT(problems[4].advice, Catch::StartsWith("it holds back the system catalogs (not prescient's tables)"));
}

TEST_CASE("doctor: a hidden session says which role shows it; dead tuples name the horizon or vacuum; the backlog") {
  DatabaseHealth health{.now = kNow};
  HorizonHolder hidden{.kind = "session", .pid = 4321, .application_name = "", .held_xmin = "5", .xid_age = 2'000'000,
                       .details_hidden = true};
  health.holders = {hidden};
  health.tables = {{.table = "future_job", .live_tuples = 1000, .dead_tuples = 50'000, .vacuum_trigger = 250},
                   {.table = "event", .live_tuples = 1000, .dead_tuples = 400, .vacuum_trigger = 250},  // too few
                   {.table = "job_history", .live_tuples = 10'000'000, .dead_tuples = 30'000,
                    .vacuum_trigger = 2'000'050}};  // autovacuum not due yet
  health.oldest_overdue_due_at = kNow - 5min;
  health.overdue = 12;
  auto problems = health_problems(health, HealthLimits{});
  INFO(all_of(problems));
  REQUIRE(problems.size() == 3);
  CHECK(problems[0].finding == "session pid 4321 (state hidden) holds xmin 5, 2000000 transactions behind");
  CHECK_THAT(problems[0].advice, Catch::Contains("granted pg_monitor") && Catch::Contains("pg_terminate_backend(4321)"));
  CHECK_THAT(problems[1].finding, Catch::StartsWith("prescient.future_job has 50000 dead tuples"));
  CHECK_THAT(problems[1].advice, Catch::StartsWith("vacuum cannot remove them while the horizon is held"));
  CHECK(problems[2].subject == "backlog");
  CHECK_THAT(problems[2].finding, Catch::Contains("(5m ago); 12 overdue when last counted"));

  health.holders.clear();
  problems = health_problems(health, {.backlog_age = 10min});
  REQUIRE(problems.size() == 1);
  CHECK_THAT(problems[0].advice, Catch::StartsWith("autovacuum has not kept up: run VACUUM (ANALYZE) prescient.future_job"));
  health.tables[0].autovacuum_enabled = false;
  CHECK_THAT(health_problems(health, {.backlog_age = 10min})[0].advice, Catch::StartsWith("autovacuum is off for it"));
}

TEST_CASE("doctor: figures read on a replica are a problem of their own, named first") {
  DatabaseHealth health{.now = kNow, .in_recovery = true};
  health.holders = {session(1234, "idle in transaction", 14min)};
  const auto problems = health_problems(health, HealthLimits{});
  INFO(all_of(problems));
  REQUIRE(problems.size() == 2);
  CHECK(problems[0].subject == "replica");
  CHECK(problems[0].advice == "read them on the primary: give its URL as --db");
  CHECK(problems[1].subject == "horizon");
  CHECK(health_problems({.now = kNow}, HealthLimits{}).empty());
}
