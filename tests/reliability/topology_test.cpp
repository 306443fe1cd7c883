// Production topologies (docs/operations.md, "Topologies"), each with the real programs on loopback:
// PgBouncer (Debian's) in transaction and session mode in front of the test cluster; a primary and a
// streaming standby (scripts/pg.sh standby) failing over under daemons on a multi-host URL.
#include <signal.h>
#include <soci/soci.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "daemons.hpp"
#include "http.hpp"
#include "prescient/client.hpp"
#include "prescient/clock.hpp"
#include "prescient/database.hpp"
#include "prescient/time_text.hpp"
#include "process.hpp"
#include "test_database.hpp"
#include "wait.hpp"

using namespace prescient;
using namespace prescient::testing;
using namespace std::chrono_literals;

namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// scripts/pgbouncer.sh in front of the server a URL names, for one test; stopped when it goes.
class PgBouncer {
 public:
  // server_lifetime 0: every transaction on a server connection of its own, as a busy pooler may give.
  PgBouncer(const std::string& mode, const std::string& server_url, bool one_transaction_per_server = false)
      : dir_(std::filesystem::temp_directory_path() / ("prescient-pgbouncer-" + std::to_string(::getpid()))),
        script_("PRESCIENT_PGBOUNCER_DIR=" + dir_.string() +
                (one_transaction_per_server ? " PRESCIENT_PGBOUNCER_SERVER_LIFETIME=0" : "") +
                " " PRESCIENT_SOURCE_DIR "/scripts/pgbouncer.sh") {
    port_ = trimmed(shell(script_ + " start " + mode + " " + connection_option(server_url, "port")));
  }
  ~PgBouncer() {
    // Whatever its status: a cluster that is down already is what this wants.
    [[maybe_unused]] const int stopped = std::system((script_ + " stop >/dev/null 2>&1").c_str());
    std::filesystem::remove_all(dir_);
  }
  PgBouncer(const PgBouncer&) = delete;
  PgBouncer& operator=(const PgBouncer&) = delete;
  // The server URL, through the pooler.
  std::string url(const std::string& server_url) const { return with_connection_option(server_url, "port", port_); }

 private:
  std::filesystem::path dir_;
  std::string script_;
  std::string port_;
};

// What a daemon must do through a pooler: bulk enqueue, `schedule` and the SQL functions work; 10 000
// checks drain with 2 workers, each run once and never early; groups run one check at a time, in order;
// the slow path leases and settles.
void drain_through(const std::string& mode, const std::vector<std::string>& daemon_flags, bool prepared) {
  const std::string direct = create_migrated_database(1);
  auto admin = connect_to(direct);
  create_ledger(*admin);
  const PgBouncer bouncer(mode, direct);
  const std::string pooled = bouncer.url(direct);
  auto db = connect_to(pooled);
  REQUIRE(through_pooler(*db));
  CHECK_FALSE(through_pooler(*admin));

  constexpr long kPlain = 10000;
  constexpr int kGroups = 20, kPerGroup = 5, kSlow = 20;
  SystemClock clock;
  const TimePoint first = std::chrono::ceil<std::chrono::seconds>(clock.now() + 4s);
  std::vector<ScheduleRequest> requests;
  for (long i = 0; i < kPlain; ++i) {
    requests.push_back({.job = "ledger", .entity_name = "plain", .entity_key = std::to_string(i), .at = first});
  }
  for (int g = 0; g < kGroups; ++g) {
    for (int i = 0; i < kPerGroup; ++i) {
      requests.push_back({.job = "ledger", .entity_name = "grouped", .entity_key = std::to_string(g * kPerGroup + i),
                          .group_key = "g" + std::to_string(g), .at = first, .payload = {{"sleep_ms", 20}}});
    }
  }
  Client(*db, {.clock = &clock}).schedule_many(requests);
  // The SQL function and the CLI, through the pooler too.
  const std::string first_text = format_time(first);
  for (int i = 0; i < kSlow / 2; ++i) {
    const std::string key = std::to_string(i);
    *db << "SELECT id FROM prescient.schedule('slow_ledger', 'slow', :key, :at, p_payload => '{\"sleep_ms\": 200}')",
        soci::use(key), soci::use(first_text);
  }
  for (int i = kSlow / 2; i < kSlow; ++i) {
    const ProcessResult scheduled = run_prescient(
        {"schedule", "--db", pooled, "--job", "slow_ledger", "--entity-name", "slow", "--entity-key",
         std::to_string(i), "--at", format_time(first), "--payload", R"({"sleep_ms": 200})"});
    REQUIRE(scheduled.exit_code == 0);
  }
  const long total = kPlain + kGroups * kPerGroup + kSlow;
  REQUIRE(count_of(*admin, "SELECT count(*) FROM prescient.future_job") == total);

  const std::filesystem::path log = std::filesystem::temp_directory_path() /
                                    ("prescient-pooled-daemon-" + std::to_string(::getpid()) + ".log");
  std::vector<std::string> args{"daemon", "--db", pooled, "--plugins", PRESCIENT_TEST_PLUGINS, "--workers", "2"};
  args.insert(args.end(), daemon_flags.begin(), daemon_flags.end());
  const pid_t daemon = start_prescient(args, "/dev/null", log.string());
  // The slow path is seen leasing: its checks carry a written lease while they run.
  long long most_leased = 0;
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  while (count_of(*admin, "SELECT count(*) FROM prescient.future_job") > 0) {
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    most_leased = std::max(most_leased, count_of(*admin, "SELECT count(*) FROM prescient.future_job"
                                                         " WHERE job = 'slow_ledger' AND claimed_by IS NOT NULL"));
    std::this_thread::sleep_for(50ms);
  }
  CHECK(most_leased > 0);
  ::kill(daemon, SIGTERM);
  CHECK(wait_for(daemon) == 0);
  const std::string said = read_file(log);
  std::filesystem::remove(log);
  INFO(said);
  CHECK(said.find("prepared statement") == std::string::npos);
  // Unprepared exactly when not told to prepare: the runner found the pooler and said so.
  CHECK((said.find("the runner's statements are not prepared") == std::string::npos) == prepared);
  CHECK(said.find(" warn ") == std::string::npos);
  CHECK(said.find(" error ") == std::string::npos);

  verify_ledger(*admin, total, {}, 1);
  // Groups: each group's checks ran one after another (a run starts after the one before it has
  // slept its 20 ms), in the order they were scheduled.
  CHECK(count_of(*admin,
                 "SELECT count(*) FROM ("
                 "  SELECT l.ran_at - lag(l.ran_at) OVER w AS gap, l.check_id - lag(l.check_id) OVER w AS step"
                 "    FROM ledger l JOIN prescient.job_history h ON h.id = l.check_id"
                 "   WHERE h.group_key IS NOT NULL WINDOW w AS (PARTITION BY h.group_key ORDER BY l.ran_at)) r"
                 " WHERE gap < interval '20 ms' OR step <= 0") == 0);
}

}  // namespace

TEST_CASE("behind PgBouncer in transaction mode: statements unprepared, everything drains once") {
  drain_through("transaction", {}, false);
}

TEST_CASE("behind PgBouncer in session mode: prepared statements, everything drains once") {
  drain_through("session", {"--prepared-statements", "on"}, true);
}

TEST_CASE("behind PgBouncer in transaction mode, prepared statements forced on: slots fail, saying what to do") {
  const std::string direct = create_migrated_database(1);
  // Each transaction on a fresh server connection: a statement prepared in one is gone in the next. (With
  // server connections reused, whether a worker lands on one its statements were not prepared on is
  // chance: an idle machine may keep every worker on servers that have them all.)
  const PgBouncer bouncer("transaction", direct, true);
  const std::string pooled = bouncer.url(direct);
  auto admin = connect_to(direct);
  SystemClock clock;
  const TimePoint at = std::chrono::ceil<std::chrono::seconds>(clock.now() + 2s);
  std::vector<ScheduleRequest> requests;
  for (int i = 0; i < 50; ++i) requests.push_back({.job = "noop", .entity_name = "e", .entity_key = std::to_string(i), .at = at});
  Client(*admin, {.clock = &clock}).schedule_many(requests);
  const std::filesystem::path log = std::filesystem::temp_directory_path() /
                                    ("prescient-prepared-daemon-" + std::to_string(::getpid()) + ".log");
  const pid_t daemon = start_prescient({"daemon", "--db", pooled, "--workers", "4", "--batch", "5",
                                        "--prepared-statements", "on"},
                                       "/dev/null", log.string());
  wait_until("the daemon to say what to do", 30s,
             [&] { return read_file(log).find("--prepared-statements off") != std::string::npos; }, 100ms);
  ::kill(daemon, SIGTERM);
  wait_for(daemon);
  const std::string said = read_file(log);
  std::filesystem::remove(log);
  INFO(said);
  CHECK(said.find("--prepared-statements off") != std::string::npos);
}

TEST_CASE("failover under 3 daemons on a multi-host URL: every check settled once, none lost, none early") {
  const long checks = soak() ? 20000 : 1500;
  const int slots = soak() ? 20 : 8;
  constexpr int kSlow = 40;
  Cluster primary("primary"), standby("standby");
  primary.start();
  REQUIRE(run_prescient({"migrate", "--slot", "1s", "--db", primary.url()}).exit_code == 0);
  standby.start_standby_of(primary);
  {
    // Synchronous replication: nothing the primary acknowledged is missing on the standby (with
    // asynchronous replication the last commits can be, docs/operations.md says what that means).
    auto db = connect_to(primary.url());
    declare_test_classes(*db);
    *db << "ALTER SYSTEM SET synchronous_standby_names = '*'";
    // Short leases (with --batch-deadline 1s below: about a minute, most of it the runner's margin), so
    // a slow check whose lease died with the old primary's sessions is rescued within the test.
    *db << "UPDATE prescient.settings SET job_timeout_seconds = 2";
    *db << "SELECT pg_reload_conf()";
    create_ledger(*db);
    schedule_spread(*db, checks, slots);
    // And the slow path: checks run outside the claim's transaction, under a written lease, across the
    // failover (their runner settles them on the new primary with the lease the old one replicated).
    for (int i = 0; i < kSlow; ++i) {
      const std::string key = "slow-" + std::to_string(i);
      *db << "SELECT id FROM prescient.schedule('slow_ledger', 'fault', :key,"
             " date_trunc('second', now()) + make_interval(secs => 3 + 2 * (:i % 4)), p_payload => '{\"sleep_ms\": 400}')",
          soci::use(key), soci::use(i);
    }
  }
  // Both hosts, the primary first; libpq takes the first that accepts writes.
  const std::string both = "postgresql://prescient@127.0.0.1:" + primary.port() + ",127.0.0.1:" + standby.port() +
                           "/prescient?target_session_attrs=read-write&connect_timeout=2";
  std::set<int> runners;
  std::chrono::milliseconds resumed_after{0};
  {
    Daemons daemons(both, 3, {"--batch-deadline", "1s"});
    wait_until_some_settled(*connect_to(primary.url()), 30s);  // under way
    primary.crash();
    standby.promote();
    const auto promoted = std::chrono::steady_clock::now();
    auto db = connect_to(standby.url());
    const long long settled_at_promotion = count_of(*db, "SELECT count(*) FROM prescient.job_history");
    CHECK(settled_at_promotion > 0);  // the failover came mid-run
    CHECK(settled_at_promotion < checks);
    while (count_of(*db, "SELECT count(*) FROM prescient.job_history") == settled_at_promotion) {
      REQUIRE(std::chrono::steady_clock::now() < promoted + 60s);
      std::this_thread::sleep_for(50ms);
    }
    resumed_after = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - promoted);
    wait_until_all_settled(*db, soak() ? 300s : 120s);
    CHECK(daemons.all_running());
    soci::rowset<int> pids = (db->prepare << "SELECT DISTINCT runner_pid FROM ledger");
    for (const int pid : pids) runners.insert(pid);
    daemons.stop();
  }
  WARN("the daemons settled again on the new primary " << resumed_after.count() << " ms after its promotion");
  // The promotion, then at most the longest wait between tries (2 s), a slot, and the 2 s between the
  // checks' slots (schedule_spread), with a second to spare.
  CHECK(resumed_after < 6s);
  auto db = connect_to(standby.url());
  // Every daemon lost its sessions at the failover: any may have run a check of a batch in flight again.
  verify_ledger(*db, checks + kSlow, runners, 2);
  WARN(count_of(*db, "SELECT count(*) FROM (SELECT check_id FROM ledger l JOIN prescient.job_history h ON h.id = l.check_id"
                     " WHERE h.job = 'slow_ledger' GROUP BY check_id HAVING count(*) > 1) r")
       << " slow-path check(s) ran again after their lease expired (a failover in their run)");
  // Repeats only within the batches in flight: 3 daemons x 2 workers x 50.
  CHECK(count_of(*db, "SELECT count(*) - count(DISTINCT check_id) FROM ledger") <= 300);
}

TEST_CASE("LISTEN through a pooler is refused saying what to give; --listen-db takes a direct connection") {
  const std::string direct = create_migrated_database(1);
  const PgBouncer bouncer("transaction", direct);
  const std::string pooled = bouncer.url(direct);
  const ProcessResult refused = run_prescient({"events", "--follow", "--db", pooled});
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.err, Catch::Contains("connection pooler") && Catch::Contains("--listen-db"));
  const ProcessResult web = run_prescient({"web", "--db", pooled, "--addr", "127.0.0.1:0"});
  CHECK(web.exit_code == 2);
  CHECK_THAT(web.err, Catch::Contains("--listen-db"));
  // Given a direct URL for it, events --follow prints what a check emits through the pooled database.
  const std::filesystem::path out = std::filesystem::temp_directory_path() /
                                    ("prescient-follow-" + std::to_string(::getpid()) + ".out");
  const pid_t follower = start_prescient({"events", "--follow", "--db", pooled, "--listen-db", direct}, out.string());
  std::this_thread::sleep_for(1s);
  auto db = connect_to(pooled);
  *db << "INSERT INTO prescient.event (id, type, source, occurred_at, emitted_at, payload) VALUES ('e-1', 'probe', 'test', now(), now(), '{}')";
  std::string printed;
  for (int i = 0; i < 50 && printed.find("probe") == std::string::npos; ++i) {
    std::this_thread::sleep_for(100ms);
    printed = read_file(out);
  }
  ::kill(follower, SIGTERM);
  CHECK(wait_for(follower) == 0);
  std::filesystem::remove(out);
  CHECK_THAT(printed, Catch::Contains("e-1") && Catch::Contains("probe"));
}

TEST_CASE("a streaming replica serves the reading commands through --read-db") {
  Cluster primary("read-primary"), standby("read-standby");
  primary.start();
  REQUIRE(run_prescient({"migrate", "--slot", "1s", "--db", primary.url()}).exit_code == 0);
  standby.start_standby_of(primary);
  for (int i = 0; i < 3; ++i) {
    REQUIRE(run_prescient({"schedule", "--db", primary.url(), "--job", "noop", "--entity-name", "order",
                           "--entity-key", std::to_string(i), "--in", "1h"})
                .exit_code == 0);
  }
  auto replica = connect_to(standby.url());
  for (int i = 0; i < 100 && count_of(*replica, "SELECT count(*) FROM prescient.future_job") < 3; ++i) {
    std::this_thread::sleep_for(50ms);
  }
  // A replica cannot count the queue figures: before the primary has, stats there says so.
  const ProcessResult uncounted = run_prescient({"stats", "--db", primary.url(), "--read-db", standby.url()});
  CHECK(uncounted.exit_code == 1);
  CHECK_THAT(uncounted.err, Catch::Contains("the replica has no queue figures yet"));
  REQUIRE(run_prescient({"stats", "--db", primary.url(), "--fresh"}).exit_code == 0);
  for (int i = 0; i < 100 && count_of(*replica, "SELECT count(*) FROM prescient.queue_figures") == 0; ++i) {
    std::this_thread::sleep_for(50ms);
  }
  // The replica stops replaying: a check scheduled now is on the primary only, which tells them apart.
  *replica << "SELECT pg_wal_replay_pause()";
  REQUIRE(run_prescient({"schedule", "--db", primary.url(), "--job", "noop", "--entity-name", "order",
                         "--entity-key", "late", "--in", "1h"})
              .exit_code == 0);
  const ProcessResult from_primary = run_prescient({"list", "--db", primary.url()});
  const ProcessResult from_replica = run_prescient({"list", "--db", primary.url(), "--read-db", standby.url()});
  CHECK(lines_of(from_primary.out).size() == 5);  // a header and 4 checks
  CHECK(from_replica.exit_code == 0);
  CHECK(lines_of(from_replica.out).size() == 4);  // 3: the replica's
  CHECK(lines_of(run_prescient({"list", "--db", primary.url()}, {{"PRESCIENT_READ_DATABASE_URL", standby.url()}}).out)
            .size() == 4);
  CHECK(run_prescient({"show", "--db", primary.url(), "--read-db", standby.url(), "--id", "1"}).exit_code == 0);
  CHECK(run_prescient({"show", "--db", primary.url(), "--read-db", standby.url(), "--id", "4"}).exit_code == 3);
  CHECK(run_prescient({"history", "--db", primary.url(), "--read-db", standby.url()}).exit_code == 0);
  // The dashboard's reads too.
  const int port = free_loopback_port();
  const pid_t web = start_prescient({"web", "--db", primary.url(), "--read-db", standby.url(), "--addr",
                                     "127.0.0.1:" + std::to_string(port)});
  std::optional<std::string> checks;
  for (int i = 0; i < 100 && !checks; ++i) {
    std::this_thread::sleep_for(50ms);
    checks = http_get(port, "/api/checks");
  }
  CHECK(http_get(port, "/api/checks/1").has_value());
  CHECK_FALSE(http_get(port, "/api/checks/4").has_value());  // 404: not on the replica
  ::kill(web, SIGTERM);
  CHECK(wait_for(web) == 0);
  REQUIRE(checks);
  CHECK(nlohmann::json::parse(*checks).size() == 3);
  // stats on a replica shows the figures as replicated, whatever their age.
  const ProcessResult stats = run_prescient({"stats", "--db", primary.url(), "--read-db", standby.url(), "--json"});
  CHECK(stats.exit_code == 0);
  // Writing commands never go to it: schedule has no --read-db.
  CHECK(run_prescient({"schedule", "--read-db", standby.url()}).exit_code == 2);
}

// What Patroni's standbys do (hot_standby_feedback on): a query on the standby holds back the primary's
// horizon through the standby's walsender, which has no session in prescient's database.
TEST_CASE("a standby's feedback holding the horizon is named on the primary; a replica's health is a problem") {
  Cluster primary("feedback-primary"), standby("feedback-standby");
  primary.start();
  REQUIRE(run_prescient({"migrate", "--db", primary.url()}).exit_code == 0);
  standby.start_standby_of(primary);
  {
    auto settings = connect_to(standby.url());
    *settings << "ALTER SYSTEM SET hot_standby_feedback = on";
    *settings << "ALTER SYSTEM SET wal_receiver_status_interval = '1s'";
    *settings << "SELECT pg_reload_conf()";
  }
  auto report = connect_to(standby.url());
  *report << "SET application_name = 'report-on-standby'";
  *report << "BEGIN ISOLATION LEVEL REPEATABLE READ";
  long long pending = -1;
  *report << "SELECT count(*) FROM prescient.future_job", soci::into(pending);  // the snapshot is taken
  auto db = connect_to(primary.url());
  // Transactions on the primary after the standby's snapshot: its xmin falls behind them.
  for (int i = 0; i < 5; ++i) *db << "SELECT txid_current()";
  wait_until("the standby's feedback to reach the primary", 30s, [&] {
    return count_of(*db, "SELECT count(*) FROM pg_stat_replication WHERE backend_xmin IS NOT NULL") == 1;
  }, 100ms);

  const ProcessResult doctor = run_prescient({"doctor", "--db", primary.url(), "--horizon-xids", "2"});
  INFO(doctor.out << doctor.err);
  CHECK(doctor.exit_code == 4);
  CHECK_THAT(doctor.out, Catch::Contains("problem (horizon): standby feedback (walsender) pid ") &&
                             Catch::Contains("a query on that standby holds it through hot_standby_feedback"));
  const ProcessResult stats = run_prescient({"stats", "--db", primary.url(), "--json"});
  REQUIRE(stats.exit_code == 0);
  const nlohmann::json holder = nlohmann::json::parse(stats.out)["health"]["horizon"]["holder"];
  CHECK(holder["kind"] == "standby");
  CHECK(holder["backend_type"] == "walsender");

  // doctor pointed at the standby itself: its statistics are not the primary's, and it says so first.
  const ProcessResult on_replica = run_prescient({"doctor", "--db", standby.url()});
  INFO(on_replica.out << on_replica.err);
  CHECK(on_replica.exit_code == 4);
  CHECK_THAT(on_replica.out, Catch::Contains("problem (replica): these figures were read on a replica") &&
                                 Catch::Contains("give its URL as --db"));

  // Through a physical slot, the feedback is held by the slot (its xmin) instead of the walsender: named so.
  *db << "SELECT pg_create_physical_replication_slot('standby_slot')";
  {
    auto settings = connect_to(standby.url());
    *settings << "ALTER SYSTEM SET primary_slot_name = 'standby_slot'";
    *settings << "SELECT pg_reload_conf()";
  }
  for (int i = 0; i < 5; ++i) *db << "SELECT txid_current()";
  wait_until("the standby's feedback to reach its slot", 30s, [&] {
    return count_of(*db, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'standby_slot' AND xmin IS NOT NULL") == 1;
  }, 100ms);
  const ProcessResult slotted = run_prescient({"doctor", "--db", primary.url(), "--horizon-xids", "2"});
  INFO(slotted.out << slotted.err);
  CHECK(slotted.exit_code == 4);
  CHECK_THAT(slotted.out, Catch::Contains("problem (horizon): replication slot 'standby_slot' pid ") &&
                              Catch::Contains("(active) holds xmin ") && Catch::Contains(") is not keeping up"));
  *report << "ROLLBACK";
}

// The holders of the horizon with no session at all: a logical slot nothing consumes (its catalog_xmin) and a
// prepared transaction nobody finished, each named with the statement that ends it.
TEST_CASE("a forgotten logical slot and a prepared transaction are named, with the statements that end them") {
  Cluster primary("holders");
  primary.start();
  {
    auto settings = connect_to(primary.url());
    *settings << "ALTER SYSTEM SET wal_level = logical";
    *settings << "ALTER SYSTEM SET max_prepared_transactions = 2";
  }
  primary.restart();
  REQUIRE(run_prescient({"migrate", "--db", primary.url()}).exit_code == 0);
  auto db = connect_to(primary.url());
  *db << "SELECT pg_create_logical_replication_slot('forgotten', 'test_decoding')";
  *db << "BEGIN";
  *db << "SELECT prescient.schedule('noop', 'order', 'held', now() + interval '1 hour')";
  *db << "PREPARE TRANSACTION 'health''s'";
  for (int i = 0; i < 3; ++i) *db << "SELECT txid_current()";

  const ProcessResult doctor = run_prescient({"doctor", "--db", primary.url(), "--horizon-xids", "2", "--json"});
  INFO(doctor.out << doctor.err);
  CHECK(doctor.exit_code == 4);
  std::map<std::string, nlohmann::json> by_holder;  // by what the finding names before the name it quotes
  const nlohmann::json answer = nlohmann::json::parse(doctor.out);
  for (const nlohmann::json& p : answer["problems"]) {
    const std::string finding = p["finding"];
    by_holder[finding.substr(0, finding.find(" '"))] = p;
  }
  REQUIRE(by_holder.count("prepared transaction") == 1);
  CHECK_THAT(by_holder["prepared transaction"]["finding"].get<std::string>(),
             Catch::StartsWith("prepared transaction 'health's' (role prescient, prepared) holds xmin "));
  CHECK_THAT(by_holder["prepared transaction"]["advice"].get<std::string>(),
             Catch::Contains("COMMIT PREPARED 'health''s' or ROLLBACK PREPARED 'health''s'"));
  REQUIRE(by_holder.count("replication slot (catalog xmin)") == 1);
  const nlohmann::json& slot = by_holder["replication slot (catalog xmin)"];
  CHECK_THAT(slot["finding"].get<std::string>(), Catch::StartsWith("replication slot (catalog xmin) 'forgotten' (inactive)"));
  CHECK_THAT(slot["advice"].get<std::string>(), Catch::Contains("it holds back the system catalogs (not prescient's tables)") &&
                                                    Catch::Contains("SELECT pg_drop_replication_slot('forgotten')"));
  *db << "ROLLBACK PREPARED 'health''s'";
  *db << "SELECT pg_drop_replication_slot('forgotten')";
}
