// The database's health as an operator meets it: a session holding a snapshot named by `stats`, `doctor` and the
// daemon's /metrics, and a role without pg_monitor that gets every figure, with the details it may not see hidden.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <soci/soci.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <thread>

#include "http.hpp"
#include "login_role.hpp"
#include "process.hpp"
#include "test_database.hpp"

using namespace prescient::testing;
using nlohmann::json;

namespace {

// A second connection in a REPEATABLE READ transaction that has taken its snapshot: it holds the horizon back
// until it ends. Named `application_name` in pg_stat_activity.
struct SnapshotHolder {
  std::unique_ptr<soci::session> db;
  long long pid = 0;
  SnapshotHolder(const std::string& url, const std::string& application_name) : db(connect_to(url)) {
    *db << "SET application_name = '" + application_name + "'";
    *db << "BEGIN ISOLATION LEVEL REPEATABLE READ";
    *db << "SELECT pg_backend_pid()", soci::into(pid);  // the first statement takes the snapshot
  }
  ~SnapshotHolder() {
    try {
      *db << "ROLLBACK";
    } catch (...) {
    }
  }
};

bool names_pid(const json& holders, long long pid) {
  for (const json& h : holders) {
    if (h["pid"] == pid) return true;
  }
  return false;
}

const json* holder_of(const json& holders, long long pid) {
  for (const json& h : holders) {
    if (h["pid"] == pid) return &h;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("stats, doctor and /metrics name the session holding a snapshot, within one refresh of it") {
  const std::string url = create_migrated_database(60);
  const int port = free_loopback_port();
  const std::string log = "/tmp/prescient-health-test-" + std::to_string(::getpid()) + ".log";
  const pid_t daemon = start_prescient(
      with_db({"daemon", "--runner-id", "health-test", "--metrics-addr", "127.0.0.1:" + std::to_string(port)}, url),
      "/dev/null", log);
  // A first scrape before the snapshot: the daemon has read the health once, without it.
  std::optional<std::string> first;
  for (int i = 0; i < 100 && !(first = http_get(port, "/metrics")); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  REQUIRE(first);
  CHECK_THAT(*first, Catch::Contains("prescient_horizon_xid_age "));
  CHECK_THAT(*first, Catch::Contains("prescient_table_dead_tuples{table=\"future_job\"} "));
  CHECK_THAT(*first, Catch::Contains("prescient_oldest_overdue_seconds 0"));
  CHECK_THAT(*first, Catch::Contains("prescient_stats_details_hidden 0"));

  const SnapshotHolder holder(url, "report");
  const std::string pid = std::to_string(holder.pid);
  const auto started = std::chrono::steady_clock::now();

  // stats and doctor read it live.
  const ProcessResult stats = run_prescient(with_db({"stats", "--json"}, url));
  REQUIRE(stats.exit_code == 0);
  const json health = json::parse(stats.out)["health"];
  INFO(health.dump(2));
  const json* held = holder_of(health["holders"], holder.pid);
  REQUIRE(held != nullptr);
  CHECK((*held)["kind"] == "session");
  CHECK((*held)["application_name"] == "report");
  CHECK((*held)["state"] == "idle in transaction");
  CHECK((*held)["details_hidden"] == false);
  CHECK((*held)["xact_start"].is_string());
  CHECK((*held)["query_start"].is_string());
  CHECK(health["horizon"]["holder"]["pid"] == holder.pid);  // nothing older holds it in this test's database
  CHECK(health["details_hidden"] == false);
  const ProcessResult text = run_prescient(with_db({"stats"}, url));
  CHECK(text.exit_code == 0);
  CHECK_THAT(text.out, Catch::Contains("horizon        session pid " + pid + " (app 'report', role ") &&
                           Catch::Contains("idle in transaction) holds xmin "));

  const ProcessResult doctor = run_prescient(with_db({"doctor", "--horizon-age", "0s"}, url));
  CHECK(doctor.exit_code == 4);
  CHECK_THAT(doctor.out, Catch::Contains("problem (horizon): session pid " + pid + " (app 'report'") &&
                             Catch::Contains("what to do: end it with SELECT pg_terminate_backend(" + pid +
                                             "), or set idle_in_transaction_session_timeout"));
  // Within the default limits (5 minutes, a million transactions) the same session is no problem yet.
  const ProcessResult calm = run_prescient(with_db({"doctor", "--json"}, url));
  CHECK(calm.exit_code == 0);
  CHECK(json::parse(calm.out)["problems"].empty());
  CHECK(names_pid(json::parse(calm.out)["health"]["holders"], holder.pid));

  // The daemon reads the health at most every 10 s: its /metrics names the session by the next read.
  std::string metrics;
  const std::string series = "pid=\"" + pid + "\"";
  while (std::chrono::steady_clock::now() - started < std::chrono::seconds{13}) {
    metrics = http_get(port, "/metrics").value_or("");
    if (metrics.find(series) != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  INFO(metrics);
  CHECK_THAT(metrics, Catch::Contains("prescient_horizon_holder_xid_age{application_name=\"report\",kind=\"session\","
                                      "name=\"\"," + series + ",state=\"idle in transaction\"} "));
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds{12});
  REQUIRE(::kill(daemon, SIGTERM) == 0);
  CHECK(wait_for(daemon) == 0);
  ::unlink(log.c_str());

  check_refused({{{"doctor", "--horizon-age", "soon"}, "invalid duration 'soon'"},
                 {{"doctor", "--horizon-xids", "0"}, "--horizon-xids must be at least 1, not 0"},
                 {{"doctor", "--dead-tuples", "-5"}, "--dead-tuples must be at least 1, not -5"}},
                url);
}

TEST_CASE("health as a role without pg_monitor: no failure, other sessions' details hidden and said to be") {
  const std::string url = create_migrated_database(60);
  auto db = connect_to(url);
  std::string name;
  *db << "SELECT 'runner_' || current_database()", soci::into(name);
  const Login runner(*db, name, "prescient_runner");
  const SnapshotHolder holder(url, "report");  // the test's own role: another role's session to the runner

  const ProcessResult stats = run_prescient(with_db({"stats", "--json"}, as_user(url, runner.name)));
  REQUIRE(stats.exit_code == 0);
  const json health = json::parse(stats.out)["health"];
  INFO(health.dump(2));
  CHECK(health["sees_all_sessions"] == false);
  CHECK(health["details_hidden"] == true);
  CHECK(health["details_note"] == "other roles' sessions show no state or times to this role: grant it pg_monitor to "
                                 "see them");
  const json* held = holder_of(health["holders"], holder.pid);
  REQUIRE(held != nullptr);
  // What every role sees: the pid, the application, the xmin; not the state nor the times.
  CHECK((*held)["application_name"] == "report");
  CHECK((*held)["details_hidden"] == true);
  CHECK((*held)["state"].is_null());
  CHECK((*held)["xact_start"].is_null());
  CHECK((*held)["held_since"].is_null());
  CHECK((*held)["xid_age"].get<long long>() >= 0);
  CHECK(!health["tables"].empty());
  const ProcessResult text = run_prescient(with_db({"stats"}, as_user(url, runner.name)));
  CHECK(text.exit_code == 0);
  CHECK_THAT(text.out, Catch::Contains("to this role: grant it pg_monitor to see them"));

  // Judged by transactions behind, the only figure it has: named, hidden, and how to see it.
  for (int i = 0; i < 3; ++i) *db << "SELECT txid_current()";  // the snapshot is at least three transactions behind
  const ProcessResult behind =
      run_prescient(with_db({"doctor", "--horizon-xids", "2"}, as_user(url, runner.name)));
  CHECK(behind.exit_code == 4);
  CHECK_THAT(behind.out, Catch::Contains("session pid " + std::to_string(holder.pid) + " (app 'report', role ") &&
                             Catch::Contains(", state hidden) holds xmin ") &&
                             Catch::Contains("run doctor as a role granted pg_monitor to see it"));

  // Granted pg_monitor, the same role sees it all.
  *db << "GRANT pg_monitor TO " + runner.name;
  const ProcessResult monitor = run_prescient(with_db({"stats", "--json"}, as_user(url, runner.name)));
  REQUIRE(monitor.exit_code == 0);
  const json seen = json::parse(monitor.out)["health"];
  CHECK(seen["sees_all_sessions"] == true);
  CHECK(seen["details_hidden"] == false);
  REQUIRE(holder_of(seen["holders"], holder.pid) != nullptr);
  CHECK((*holder_of(seen["holders"], holder.pid))["state"] == "idle in transaction");
}

TEST_CASE("stats reads the health on the primary (--db) while its figures come from --read-db") {
  const std::string primary = create_migrated_database(60);
  const std::string replica = create_migrated_database(60);  // stands in for a replica: another database
  const SnapshotHolder holder(primary, "report");
  const ProcessResult stats = run_prescient(with_db({"stats", "--json", "--read-db", replica}, primary));
  REQUIRE(stats.exit_code == 0);
  const json health = json::parse(stats.out)["health"];
  INFO(health.dump(2));
  CHECK(names_pid(health["holders"], holder.pid));
  // Read on the "replica", the session of the other database would not be there.
  const ProcessResult there = run_prescient(with_db({"stats", "--json"}, replica));
  REQUIRE(there.exit_code == 0);
  CHECK_FALSE(names_pid(json::parse(there.out)["health"]["holders"], holder.pid));
}
