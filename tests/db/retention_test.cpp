// History partitions (sql/0013) and retention: partitions made ahead of time, rows of a month without
// one kept in the default partition until it exists, whole months dropped by purge.
#include <catch2/catch.hpp>
#include <soci/soci.h>

#include <thread>

#include "builtin_jobs.hpp"
#include "prescient/clock.hpp"
#include "prescient/daemon.hpp"
#include "prescient/retention.hpp"
#include "prescient/time_text.hpp"
#include "test_database.hpp"

using namespace prescient;
using namespace prescient::jobs;
using prescient::testing::connect_to;
using prescient::testing::count_of;
using prescient::testing::create_migrated_database;

namespace {

std::vector<std::string> partitions(soci::session& db) {
  std::vector<std::string> names(400);
  db << "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
        " WHERE i.inhparent IN ('prescient.job_history'::regclass, 'prescient.check_run'::regclass)",
      soci::into(names);
  return names;
}

bool has_partition(soci::session& db, const std::string& name) {
  const auto names = partitions(db);
  return std::find(names.begin(), names.end(), name) != names.end();
}

// `count` history rows finished every `step` from `first` on (another tool's rows: the test sets the times).
void add_history(soci::session& db, const std::string& first, const std::string& step, int count) {
  db << "INSERT INTO prescient.job_history (id, job, entity_name, entity_key, payload, first_check_at, last_check_at,"
        "    check_count, attempts, enqueued_on, enqueued_by, finished_at, finished_by, outcome)"
        " SELECT g, 'noop', 'o', g::text, '{}', t, t, 1, 0, t, 'test', t, 'test', 'done'"
        "   FROM generate_series(0, :n - 1) g,"
        "        LATERAL (SELECT :first::timestamptz + g * :step::interval AS t) x",
      soci::use(count), soci::use(first), soci::use(step);
}

// Stops at the first wait: the daemon starts (and does its upkeep), then returns.
class StopAtOnce final : public Waiter {
 public:
  bool wait_until(TimePoint) override {
    stop();
    return false;
  }
};

}  // namespace

TEST_CASE("history partitions: made ahead of time, and a month without one waits in the default partition") {
  const std::string url = create_migrated_database(60);
  auto db = connect_to(url);
  // migrate made this month's and the next three months' partitions (and the default one).
  const std::string now_month = format_time(SystemClock().now()).substr(0, 7);
  CHECK(has_partition(*db, "job_history_" + now_month.substr(0, 4) + "_" + now_month.substr(5, 2)));
  CHECK(has_partition(*db, "job_history_default"));

  CHECK(ensure_history_partitions(*db, parse_time("2031-05-10T12:00:00Z")) == 4);  // May through August
  CHECK(has_partition(*db, "job_history_2031_05"));
  CHECK(has_partition(*db, "job_history_2031_08"));
  CHECK_FALSE(has_partition(*db, "job_history_2031_09"));
  CHECK(ensure_history_partitions(*db, parse_time("2031-05-10T12:00:00Z")) == 0);

  // A settlement in a month that has no partition yet is not refused: it lands in the default one...
  add_history(*db, "2033-01-31T23:59:59.999999Z", "1 microsecond", 2);  // the last instant of January, and February's first
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history_default") == 2);
  // ... and moves into its month's partition when that is made (bounds in UTC, whatever the session's zone).
  *db << "SET TIME ZONE 'America/New_York'";
  CHECK(ensure_history_partitions(*db, parse_time("2033-01-01T00:00:00Z")) == 4);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history_default") == 0);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history_2033_01") == 1);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history_2033_02") == 1);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history") == 2);

  CHECK_THROWS_WITH((*db << "SELECT prescient.ensure_history_partitions('1900-01-01Z', '2100-01-01Z')"),
                    Catch::Contains("more than 100 years"));
}

TEST_CASE("purge drops the months wholly before the cut-off and deletes the older rows of the rest") {
  const std::string url = create_migrated_database(60);
  auto db = connect_to(url);
  ensure_history_partitions(*db, parse_time("2031-01-01T00:00:00Z"));  // January through April
  add_history(*db, "2031-01-01T00:00:00Z", "1 hour", 24 * (31 + 28 + 31));  // every hour of Q1
  add_history(*db, "2020-01-01T00:00:00Z", "1 day", 3);                    // no partition: the default one
  const long long total = count_of(*db, "SELECT count(*) FROM prescient.job_history");
  // January, and the (empty) months migrate made around today.
  const long long whole_months =
      count_of(*db, "SELECT count(*) FROM prescient.history_partitions() WHERE ends_at <= '2031-02-15T00:00:00Z'");
  REQUIRE(whole_months >= 1);

  // Deferrals flow limits recorded (part of the checks' traces): 250 before the cut-off, one after.
  *db << "INSERT INTO prescient.flow_deferral (check_id, deferred_at, limit_name, key_value, until)"
         " SELECT i, '2031-01-01T00:00:00Z'::timestamptz + i * interval '1 minute', 'l', 'k', '2031-03-01T00:00:00Z'"
         "   FROM generate_series(1, 250) i";
  *db << "INSERT INTO prescient.flow_deferral (check_id, deferred_at, limit_name, key_value, until)"
         " VALUES (1, '2031-02-20T00:00:00Z', 'l', 'k', '2031-03-01T00:00:00Z')";

  // Runs of the checks' timelines, one every hour of Q1 (each month's in its partition): they go with the
  // history of the same span.
  *db << "INSERT INTO prescient.check_run (id, due_at, finished_at, runner, result, next_check_at, check_count, attempts)"
         " SELECT g, t, t, 'r', 'rescheduled', t + interval '1 hour', 1, 0"
         "   FROM generate_series(0, 24 * (31 + 28 + 31) - 1) g,"
         "        LATERAL (SELECT '2031-01-01T00:00:00Z'::timestamptz + g * interval '1 hour' AS t) x";
  REQUIRE(has_partition(*db, "check_run_2031_01"));
  REQUIRE(count_of(*db, "SELECT count(*) FROM prescient.check_run_2031_02") == 24 * 28);

  const HistoryPurge purge = purge_history(*db, parse_time("2031-02-15T00:00:00Z"), 100);
  CHECK_FALSE(has_partition(*db, "check_run_2031_01"));
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.check_run WHERE finished_at < '2031-02-15T00:00:00Z'") == 0);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.check_run") == 24 * (14 + 31));
  CHECK(purge.runs == 24 * 14);  // February's first half, row by row; January went with its month
  CHECK(purge.deferrals == 250);  // in batches of 100
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.flow_deferral") == 1);
  CHECK(purge.months_dropped == whole_months);
  CHECK(purge.rows == 24 * 31 + 24 * 14 + 3);
  CHECK_FALSE(has_partition(*db, "job_history_2031_01"));
  CHECK(has_partition(*db, "job_history_2031_02"));
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history") == total - purge.rows);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history WHERE finished_at < '2031-02-15T00:00:00Z'") == 0);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history_2031_02") == 24 * 14);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history_2031_03") == 24 * 31);
  // Nothing left to remove: a second purge with the same cut-off finds nothing.
  const HistoryPurge again = purge_history(*db, parse_time("2031-02-15T00:00:00Z"), 100);
  CHECK(again.rows == 0);
  CHECK(again.months_dropped == 0);
  // Only monthly partitions are dropped, never the default one or one that is not a month.
  CHECK_THROWS_WITH((*db << "SELECT prescient.drop_history_partition('job_history_default')"),
                    Catch::Contains("not a monthly partition"));
  CHECK_THROWS_WITH((*db << "SELECT prescient.drop_history_partition('future_job')"),
                    Catch::Contains("not a monthly partition"));
}

TEST_CASE("the daemon makes the history partitions its clock needs when it starts") {
  const std::string url = create_migrated_database(60);
  auto db = connect_to(url);
  Registry registry;
  register_builtin_jobs(registry);
  ManualClock clock(parse_time("2040-06-10T08:00:00Z"));
  StopAtOnce waiter;
  Daemon daemon({.database_url = url, .runner_id = "daemon"}, registry, clock, waiter);
  const DaemonStats stats = daemon.run();
  CHECK(stats.errors == 0);
  CHECK(has_partition(*db, "job_history_2040_06"));
  CHECK(has_partition(*db, "job_history_2040_09"));
}

TEST_CASE("purge waits out a busy partition by SQLSTATE, whatever the server's language") {
  const std::string url = create_migrated_database(60);
  auto db = connect_to(url);
  ensure_history_partitions(*db, parse_time("2031-01-01T00:00:00Z"));
  add_history(*db, "2031-01-01T00:00:00Z", "1 day", 10);
  // The server speaks German to this session: "Sperrzeitüberschreitung", not "lock timeout".
  // (scripts/test.sh generates the de_DE.UTF-8 locale before it starts the cluster.)
  *db << "SET lc_messages = 'de_DE.UTF-8'";
  // A reader holds January for 2.5 s: the first drop runs into its 2 s lock_timeout; a later attempt succeeds.
  auto reader = connect_to(url);
  *reader << "BEGIN";
  *reader << "LOCK TABLE prescient.job_history_2031_01 IN ACCESS SHARE MODE";
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    *reader << "COMMIT";
  });
  HistoryPurge purge;
  CHECK_NOTHROW(purge = purge_history(*db, parse_time("2031-02-01T00:00:00Z"), 100));
  release.join();
  CHECK(purge.rows == 10);
  CHECK_FALSE(has_partition(*db, "job_history_2031_01"));
}
