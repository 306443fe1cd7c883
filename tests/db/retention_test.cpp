// History partitions (sql/0013) and retention: partitions made ahead of time, rows of a month without
// one kept in the default partition until it exists, whole months dropped by purge.
#include <catch2/catch.hpp>
#include <soci/soci.h>

#include <thread>

#include "builtin_jobs.hpp"
#include "db/connection.hpp"
#include "db/pq.hpp"
#include "prescient/client.hpp"
#include "prescient/clock.hpp"
#include "prescient/daemon.hpp"
#include "prescient/migrations.hpp"
#include "prescient/retention.hpp"
#include "prescient/time_text.hpp"
#include "login_role.hpp"
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

// A failure finished at `at`: a dead letter unless `retried`.
void add_failure(soci::session& db, long long id, const std::string& at, bool retried) {
  db << "INSERT INTO prescient.job_history (id, job, entity_name, entity_key, payload, first_check_at, last_check_at,"
        "    check_count, attempts, enqueued_on, enqueued_by, finished_at, finished_by, outcome, retried)"
        " SELECT :id, 'noop', 'o', 'dead', '{}', t, t, 1, 5, t, 'test', t, 'test', 'failed', :retried::int::boolean"
        "   FROM (SELECT :at::timestamptz AS t) x",
      soci::use(id), soci::use(static_cast<int>(retried)), soci::use(at);
}

// A run of a check's timeline every `step` from `first` on.
void add_runs(soci::session& db, const std::string& first, const std::string& step, int count) {
  db << "INSERT INTO prescient.check_run (id, due_at, finished_at, runner, result, next_check_at, check_count, attempts)"
        " SELECT g, t, t, 'r', 'rescheduled', t + interval '1 hour', 1, 0"
        "   FROM generate_series(0, :n - 1) g, LATERAL (SELECT :first::timestamptz + g * :step::interval AS t) x",
      soci::use(count), soci::use(first), soci::use(step);
}

// A deferral by a flow limit every `step` from `first` on.
void add_deferrals(soci::session& db, const std::string& first, const std::string& step, int count) {
  db << "INSERT INTO prescient.flow_deferral (check_id, deferred_at, limit_name, key_value, until)"
        " SELECT g, :first::timestamptz + g * :step::interval, 'l', 'k', '2040-01-01T00:00:00Z'"
        "   FROM generate_series(0, :n - 1) g",
      soci::use(first), soci::use(step), soci::use(count);
}

// An event emitted every `step` from `first` on.
void add_events(soci::session& db, const std::string& first, const std::string& step, int count) {
  db << "INSERT INTO prescient.event (id, type, source, occurred_at, emitted_at, payload)"
        " SELECT 'e-' || :first || '-' || g, 't', 'test', t, t, '{}'"
        "   FROM generate_series(0, :n - 1) g, LATERAL (SELECT :first::timestamptz + g * :step::interval AS t) x",
      soci::use(first), soci::use(count), soci::use(first), soci::use(step);
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

TEST_CASE("retention set once in the settings: what is past it goes, what is inside stays, dead letters stay") {
  const std::string url = create_migrated_database(60);
  auto db = connect_to(url);
  ensure_history_partitions(*db, parse_time("2031-01-01T00:00:00Z"));  // January through April
  add_history(*db, "2031-01-01T00:00:00Z", "1 hour", 24 * (31 + 28 + 31));  // every hour of Q1
  add_failure(*db, 900001, "2031-01-10T00:00:00Z", false);  // dead letters in January, a month dropped whole,
  add_failure(*db, 900002, "2031-01-20T00:00:00Z", false);
  add_failure(*db, 900003, "2031-03-01T00:00:00Z", false);  // and in the month the cut-off falls in
  add_failure(*db, 900004, "2031-01-15T00:00:00Z", true);   // retried: history like any other row
  add_runs(*db, "2031-01-01T00:00:00Z", "1 hour", 24 * (31 + 28 + 31));
  add_deferrals(*db, "2031-01-01T00:00:00Z", "1 day", 31 + 28 + 31);
  add_events(*db, "2031-03-20T00:00:00Z", "1 hour", 24 * 12);  // 20 to 31 March
  const TimePoint now = parse_time("2031-04-01T00:00:00Z");

  SECTION("nothing is set: nothing goes") {
    const long long history = count_of(*db, "SELECT count(*) FROM prescient.job_history");
    const RetentionRun run = apply_retention(*db, now, 100);
    CHECK(run.history.rows + run.history.runs + run.history.deferrals + run.dead_letters + run.events == 0);
    CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history") == history);
    CHECK(count_of(*db, "SELECT count(*) FROM prescient.event") == 24 * 12);
  }

  SECTION("history 30 days, events 7 days: older rows go, by whole months first; dead letters stay") {
    *db << "UPDATE prescient.settings SET history_retention_seconds = 30 * 86400, event_retention_seconds = 7 * 86400";
    const RetentionRun run = apply_retention(*db, now, 100);  // cut-offs: 2 March, 25 March
    CHECK_FALSE(has_partition(*db, "job_history_2031_01"));
    CHECK_FALSE(has_partition(*db, "check_run_2031_01"));
    CHECK(run.history.months_dropped >= 2);  // January and February (and the empty months migrate made before)
    CHECK(run.history.rows == 24 * (31 + 28 + 1) + 1);  // the retried failure too
    CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history WHERE finished_at < '2031-03-02T00:00:00Z'"
                        " AND outcome = 'done'") == 0);
    CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history WHERE outcome = 'done'") == 24 * 30);
    // Every dead letter stays, January's in the default partition now (no month holds them); the retried one went.
    CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history WHERE id > 900000 AND NOT retried") == 3);
    CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history_default WHERE id IN (900001, 900002)") == 2);
    CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history WHERE retried") == 0);
    // They are still dead letters: prescient.dead_letter and its index find them.
    CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history h WHERE prescient.dead_letter(h.outcome, h.retried)") == 3);
    // The timelines and the deferrals of the same span go with the history.
    CHECK(count_of(*db, "SELECT count(*) FROM prescient.check_run WHERE finished_at < '2031-03-02T00:00:00Z'") == 0);
    CHECK(count_of(*db, "SELECT count(*) FROM prescient.check_run") == 24 * 30);
    CHECK(count_of(*db, "SELECT count(*) FROM prescient.flow_deferral") == 30);
    CHECK(run.history.deferrals == 31 + 28 + 1);
    // Events: those emitted before 25 March went, the rest stay.
    CHECK(run.events == 24 * 5);
    CHECK(count_of(*db, "SELECT count(*) FROM prescient.event WHERE emitted_at < '2031-03-25T00:00:00Z'") == 0);
    CHECK(count_of(*db, "SELECT count(*) FROM prescient.event") == 24 * 7);
    // Again at the same time: nothing more to do.
    const RetentionRun again = apply_retention(*db, now, 100);
    CHECK(again.history.rows + again.history.runs + again.history.deferrals + again.dead_letters + again.events == 0);

    SECTION("dead letters 45 days: the older dead letters go too, the others stay") {
      *db << "UPDATE prescient.settings SET dead_letter_retention_seconds = 45 * 86400";  // cut-off: 15 February
      const RetentionRun dead = apply_retention(*db, now, 1);
      CHECK(dead.dead_letters == 2);
      CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history WHERE id > 900000") == 1);
      CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history WHERE outcome = 'done'") == 24 * 30);
    }
  }
}

TEST_CASE("an upgrade to retention in the settings deletes nothing, and sets none") {
  const std::string url = create_migrated_database(60);
  auto db = connect_to(url);
  // A database as it was before migration 0053: no retention columns, history, dead letters and events of years.
  *db << "ALTER TABLE prescient.settings DROP COLUMN history_retention_seconds, DROP COLUMN dead_letter_retention_seconds,"
         " DROP COLUMN event_retention_seconds";
  *db << "DELETE FROM prescient.schema_migrations WHERE version = 53";
  add_history(*db, "2020-01-01T00:00:00Z", "7 days", 300);
  add_failure(*db, 900001, "2020-02-01T00:00:00Z", false);
  add_runs(*db, "2020-01-01T00:00:00Z", "7 days", 300);
  add_deferrals(*db, "2020-01-01T00:00:00Z", "7 days", 300);
  add_events(*db, "2020-01-01T00:00:00Z", "7 days", 300);
  const auto counts = [&] {
    return std::vector<long long>{count_of(*db, "SELECT count(*) FROM prescient.job_history"),
                                  count_of(*db, "SELECT count(*) FROM prescient.check_run"),
                                  count_of(*db, "SELECT count(*) FROM prescient.flow_deferral"),
                                  count_of(*db, "SELECT count(*) FROM prescient.event")};
  };
  const std::vector<long long> before = counts();
  CHECK(before == std::vector<long long>{301, 300, 300, 300});

  const MigrationReport report = migrate(*db, std::nullopt);
  REQUIRE(report.applied == std::vector<std::string>{"0053_retention_settings.sql"});
  CHECK(counts() == before);
  const Retention retention = read_retention(*db);
  CHECK_FALSE(retention.history);
  CHECK_FALSE(retention.dead_letters);
  CHECK_FALSE(retention.events);
  // And the retention the daemon applies removes nothing until the owner sets one.
  const RetentionRun run = apply_retention(*db, SystemClock().now(), 100);
  CHECK(run.history.rows + run.history.runs + run.history.deferrals + run.dead_letters + run.events == 0);
  CHECK(counts() == before);
}

TEST_CASE("the daemon's retention keeper applies the settings on its own, on a role that may drop, and no other") {
  const std::string url = create_migrated_database(60);
  auto db = connect_to(url);
  add_history(*db, "2020-01-01T00:00:00Z", "1 day", 10);
  add_failure(*db, 900001, "2020-01-05T00:00:00Z", false);
  add_events(*db, "2020-01-01T00:00:00Z", "1 day", 10);
  *db << "UPDATE prescient.settings SET history_retention_seconds = 86400, event_retention_seconds = 86400";
  const SystemClock clock;
  {
    // On the runners' role it may not drop: it looks a few times and removes nothing.
    std::string database;
    *db << "SELECT current_database()", soci::into(database);
    const prescient::testing::Login runner(*db, "keeper_" + database, "prescient_runner");
    const RetentionKeeper keeper(prescient::testing::as_user(url, runner.name), clock, std::chrono::milliseconds{50});
    std::this_thread::sleep_for(std::chrono::milliseconds{300});
  }
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.event") == 10);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history") == 11);
  {
    const RetentionKeeper keeper(url, clock, std::chrono::milliseconds{50});
    for (int i = 0; i < 200 && count_of(*db, "SELECT count(*) FROM prescient.event") > 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds{25});
    }
  }
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.event") == 0);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history") == 1);  // the dead letter
}

// Flow control's own rows: a key value's state row that holds nothing a missing row would not, and a place
// whose check's lease ended, go at each retention turn whatever the settings (a day after, for runners'
// clocks); the counts of deferrals go with the history's retention. The limit admits as before afterwards.
TEST_CASE("retention forgets flow control's rows that hold nothing, and the counts of old deferrals") {
  auto db = connect_to(create_migrated_database(60));
  const TimePoint now = parse_time("2031-04-01T00:00:00Z");
  *db << "INSERT INTO prescient.flow_limit (name, key, rate, per_seconds, concurrency, updated_at, updated_by)"
         " VALUES ('per-tenant', 'payload.tenant', 1, 60, NULL, now(), 'ops'),"
         "        ('places', 'payload.tenant', NULL, 1, 2, now(), 'ops')";
  ManualClock before(now - std::chrono::hours{1});
  Client client(*db, {.clock = &before, .enqueued_by = "test"});
  const std::int64_t leased = client.schedule({.job = "noop", .entity_name = "t", .entity_key = "leased",
                                               .at = now + std::chrono::hours{1}}).id;
  const std::int64_t waiting = client.schedule({.job = "noop", .entity_name = "t", .entity_key = "waiting",
                                                .at = now + std::chrono::hours{1}}).id;
  *db << "UPDATE prescient.future_job SET claimed_by = 'r', claim_token = 7, claimed_until = '2031-04-01T00:05:00Z'"
         " WHERE id = :id",
      soci::use(leased);
  *db << "INSERT INTO prescient.flow_state (limit_name, key_value, tat) VALUES"
         " ('per-tenant', 'idle', '2031-03-30T00:00:00Z'),"    // full again two days ago: goes
         " ('per-tenant', 'lately', '2031-03-31T12:00:00Z'),"  // within the day: stays
         " ('per-tenant', 'spent', '2031-04-01T00:10:00Z'),"   // its budget spent ahead: stays
         " ('places', 'a', '-infinity')";                      // a concurrency limit's lock row: goes
  *db << "INSERT INTO prescient.flow_lease (limit_name, key_value, check_id) VALUES"
         " ('places', 'a', :leased), ('places', 'a', 424242)",  // running; a check gone
      soci::use(leased);
  *db << "INSERT INTO prescient.flow_figure (limit_name, key_value, deferred, last_deferred_at) VALUES"
         " ('per-tenant', 'february', 5, '2031-02-01T00:00:00Z'), ('per-tenant', 'march', 3, '2031-03-30T00:00:00Z')";

  SECTION("no retention set: the idle rows go, the counts stay") {
    const RetentionRun run = apply_retention(*db, now, 1);  // in batches of one
    CHECK(run.idle_flow_rows == 3);
    CHECK(run.history.flow_figures == 0);
    CHECK(count_of(*db, "SELECT count(*) FROM prescient.flow_state WHERE key_value IN ('lately', 'spent')") == 2);
    CHECK(count_of(*db, "SELECT count(*) FROM prescient.flow_state") == 2);
    CHECK(count_of(*db, "SELECT count(*) FROM prescient.flow_lease") == 1);
    CHECK(count_of(*db, "SELECT count(*) FROM prescient.flow_figure") == 2);
    CHECK(apply_retention(*db, now, 1).idle_flow_rows == 0);
  }
  SECTION("history 30 days: the counts of key values last deferred before it go too") {
    *db << "UPDATE prescient.settings SET history_retention_seconds = 30 * 86400";
    const RetentionRun run = apply_retention(*db, now, 100);
    CHECK(run.history.flow_figures == 1);
    CHECK(count_of(*db, "SELECT count(*) FROM prescient.flow_figure WHERE key_value = 'march'") == 1);
  }
  SECTION("a forgotten key value is admitted as a full bucket, and its state row is made again") {
    apply_retention(*db, now, 100);
    db::pq::Result admitted = db::pq::exec(
        db::native_connection(*db), "admit",
        "SELECT start_us FROM prescient.flow_admit(ARRAY[$1::bigint], ARRAY['per-tenant'], ARRAY['idle'],"
        " prescient.us('2031-04-01T00:00:00Z'), 0, 250000, 1, 100000)",
        {std::to_string(waiting)});
    REQUIRE(admitted.rows() == 1);
    CHECK(admitted.integer(0, 0) == count_of(*db, "SELECT prescient.us('2031-04-01T00:00:00Z')"));
    CHECK(count_of(*db, "SELECT count(*) FROM prescient.flow_state WHERE key_value = 'idle'"
                        " AND tat = '2031-04-01T00:01:00Z'") == 1);
  }
}
