#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <soci/soci.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "http.hpp"
#include "login_role.hpp"
#include "process.hpp"
#include "prescient/time_text.hpp"
#include "test_database.hpp"

using namespace prescient::testing;
using nlohmann::json;

TEST_CASE("runner commands refuse bad input with exit 2 and one line") {
  const std::string url = create_migrated_database(900);
  check_refused({
      {{"run-slot", "--slot", "2026-11-21T13:05:00Z"}, "not on the"},
      {{"run-slot", "--slot", "2099-01-01T00:00:00Z"}, "nothing fires early"},
      {{"run-slot", "--shard", "2/2"}, "'2/2'"},
      {{"run-slot", "--workers", "0"}, "--workers 0"},
      {{"run-slot", "--batch", "0"}, "--batch 0"},
      {{"run-slot", "--batch-deadline", "0s"}, "--batch-deadline 0s"},
      {{"daemon", "--batch-deadline", "soon"}, "'soon'"},
      {{"run-slot", "--plugins", "/nonexistent"}, "'/nonexistent'"},
      {{"run-slot", "--commands", "/nonexistent"}, "'/nonexistent'"},
      {{"run-slot", "--http-targets", "/nonexistent"}, "--http-targets '/nonexistent' is not a readable file"},
      {{"sweep", "--http-targets", "/etc/hostname"}, "--http-targets '/etc/hostname' is not JSON"},
      {{"sweep", "--mode", "skip"}, "'skip'"},
      {{"sweep", "--until", "2099-01-01T00:00:00Z"}, "nothing fires early"},
      {{"daemon", "--shard", "x"}, "'x'"},
      {{"run-slot", "--default-max-checks", "0"}, "invalid max_checks (a number or unlimited) '0': use 1 to 1000000"},
      {{"daemon", "--default-max-attempts", "many"}, "invalid max_attempts 'many'"},
      {{"sweep", "--default-backoff", "1h..1m"}, "the ceiling is shorter than the first wait"},
      {{"run-slot", "--default-backoff", "0s"}, "invalid backoff '0s': use 1s to 1d"},
      {{"run-slot", "--default-timeout", "2d"}, "invalid timeout '2d': use 1s to 1d"},
      {{"retry"}, "--id"},
  }, url);
  const ProcessResult missing = run_prescient(with_db({"retry", "--id", "12345"}, url));
  CHECK(missing.exit_code == 3);
  CHECK_THAT(missing.err, Catch::Contains("no failed check with id 12345"));
}

TEST_CASE("run-slot fires exactly the checks of its slot and prints a summary; --json prints one object") {
  const std::string url = create_migrated_database(1);
  // Long past: stored at the next slot after now (due at once, never early). One call, so one instant:
  // three separate calls could straddle a boundary of this one-second grid and land in two slots.
  std::string lines;
  for (int i = 0; i < 3; ++i) {
    lines += R"({"job": "emit", "entity_name": "e", "entity_key": ")" + std::to_string(i) +
             R"(", "at": "@1000000000", "payload": {"type": "ping"}})" + "\n";
  }
  const ProcessResult scheduled = run_prescient(with_db({"schedule", "--file", "-", "--json"}, url), {}, lines);
  REQUIRE(scheduled.exit_code == 0);
  const json created = json::parse(scheduled.out);
  REQUIRE(created.size() == 3);
  const std::string slot = created[0]["next_check_at"];
  for (const auto& check : created) REQUIRE(check["next_check_at"] == slot);
  // The slot is at most a second ahead on this grid: until it begins, run-slot refuses it.
  ProcessResult fired;
  for (int attempt = 0; attempt < 30; ++attempt) {
    fired = run_prescient(with_db({"run-slot", "--slot", slot, "--json", "--runner-id", "cli-test"}, url));
    if (fired.exit_code == 0) break;
    CHECK_THAT(fired.err, Catch::Contains("nothing fires early"));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  REQUIRE(fired.exit_code == 0);
  const json report = json::parse(fired.out);
  CHECK(report["slot"] == slot);
  CHECK(report["claimed"] == 3);
  CHECK(report["done"] == 3);
  CHECK(report["events"] == 3);
  CHECK(report["runner_id"] == "cli-test");
  const ProcessResult again = run_prescient(with_db({"run-slot", "--slot", slot}, url));
  CHECK(again.exit_code == 0);
  CHECK_THAT(again.out, Catch::StartsWith("slot " + slot + ": claimed 0,"));
}

// Trace context (docs/operations.md, "Traces in the logs"): a check put in with --traceparent fails its run;
// the JSON log line of that failure and its history row carry the same trace id, the line the run's span id.
TEST_CASE("a failed run's JSON log line and its history row carry the trace id given at enqueue") {
  const std::string url = create_migrated_database(1);
  const std::string trace = "0af7651916cd43dd8448eb211c80319c";
  const ProcessResult scheduled = run_prescient(with_db(
      {"schedule", "--job", "vanished", "--entity-name", "e", "--entity-key", "1", "--at", "@1000000000",
       "--allow-unknown-class", "--max-attempts", "1", "--traceparent", "00-" + trace + "-b7ad6b7169203331-01",
       "--json"},
      url));
  REQUIRE(scheduled.exit_code == 0);
  const json created = json::parse(scheduled.out);
  const std::string slot = created["next_check_at"];
  ProcessResult fired;
  for (int attempt = 0; attempt < 30; ++attempt) {
    fired = run_prescient(with_db({"--log-format", "json", "run-slot", "--slot", slot}, url));
    if (fired.exit_code == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  REQUIRE(fired.exit_code == 0);
  std::optional<json> failure;
  std::istringstream lines(fired.err);
  for (std::string line; std::getline(lines, line);) {
    const json object = json::parse(line);
    if (object["msg"].get<std::string>().find("failed for check " + std::to_string(created["id"].get<long long>())) !=
        std::string::npos) {
      failure = object;
    }
  }
  INFO(fired.err);
  REQUIRE(failure);
  CHECK((*failure)["level"] == "warning");
  CHECK((*failure)["trace_id"] == trace);
  const std::string span = (*failure)["span_id"];
  CHECK(span.size() == 16);
  CHECK(span != "b7ad6b7169203331");  // the run's own span, under the one given

  const ProcessResult shown =
      run_prescient(with_db({"show", "--id", std::to_string(created["id"].get<long long>()), "--json"}, url));
  REQUIRE(shown.exit_code == 0);
  const json history = json::parse(shown.out)["history"];
  REQUIRE(history.size() == 1);
  CHECK(history[0]["outcome"] == "failed");
  CHECK(history[0]["traceparent"].get<std::string>().substr(3, 32) == trace);
}

// The class registry (docs/design.md, "The class registry"): enqueue knows the classes the database knows;
// a runner declares the classes it loads (its plugins' too) at its start.
TEST_CASE("jobs lists the registry and the classes loaded here; run-slot declares its plugin's class") {
  const std::string url = create_migrated_database();
  const std::vector<std::string> order{"schedule", "--job", "order_unshipped", "--entity-name", "orders",
                                       "--entity-key", "1", "--in", "3h"};
  const ProcessResult before = run_prescient(with_db(order, url));
  CHECK(before.exit_code == 2);
  CHECK_THAT(before.err, Catch::StartsWith("prescient: unknown job class 'order_unshipped' (known: "));

  const auto classes_of = [&](std::vector<std::string> args) {
    const ProcessResult r = run_prescient(with_db(std::move(args), url));
    REQUIRE(r.exit_code == 0);
    std::map<std::string, json> by_name;
    for (const auto& c : json::parse(r.out)) by_name[c["name"]] = c;
    return by_name;
  };
  auto listed = classes_of({"jobs", "--plugins", PRESCIENT_EXAMPLE_PLUGINS, "--json"});
  for (const char* builtin : {"noop", "emit", "sql", "command", "http", "cron"}) {
    INFO(builtin);
    CHECK(listed[builtin]["origin"] == "built-in");
    CHECK(listed[builtin]["in_database"] == true);
    CHECK(listed[builtin]["loaded"] == "built-in");
  }
  CHECK(listed["command"]["class_policy"]["long_running"] == true);
  CHECK(listed["order_unshipped"]["in_database"] == false);
  CHECK_THAT(listed["order_unshipped"]["loaded"].get<std::string>(), Catch::EndsWith("liborder_unshipped.so"));
  CHECK(listed["order_unshipped"]["class_policy"]["max_checks"] == 2);

  // A run-slot with the plugin declares its class, with the plugin's file and its runner id.
  const ProcessResult fired =
      run_prescient(with_db({"run-slot", "--plugins", PRESCIENT_EXAMPLE_PLUGINS, "--runner-id", "r-plugins"}, url));
  REQUIRE(fired.exit_code == 0);
  listed = classes_of({"jobs", "--json"});
  CHECK(listed["order_unshipped"]["in_database"] == true);
  CHECK_THAT(listed["order_unshipped"]["origin"].get<std::string>(), Catch::EndsWith("liborder_unshipped.so"));
  CHECK(listed["order_unshipped"]["runs_in"] == "runner");
  CHECK(listed["order_unshipped"]["declared_by"] == "r-plugins");
  CHECK(listed["order_unshipped"]["seen_at"].is_string());
  CHECK(listed["order_unshipped"]["loaded"].is_null());  // this jobs list loads no plugin
  CHECK(run_prescient(with_db(order, url)).exit_code == 0);
}

// One naming rule (sql/functions/025_names.sql) for what an operator names and others refer to: a class, a
// flow limit, a schedule. Every door refuses a name that markup, a shell or a list would read as its own, or
// that holds a control character, naming the name and the character; nothing is written. Letters of any
// script, digits, spaces inside and _ . : / @ + # = - pass.
TEST_CASE("one naming rule for classes, limits and schedules, at every door: exit 2 or PR400, nothing written") {
  const std::string url = create_migrated_database();
  auto db = connect_to(url);
  const auto run = [&](std::vector<std::string> args) { return run_prescient(with_db(std::move(args), url)); };
  const std::string rule = ": a name holds letters, digits, spaces inside and _ . : / @ + # = -";
  struct Door {
    std::vector<std::string> cli;
    std::string sql;
    std::string message;
  };
  const std::vector<Door> doors{
      {{"jobs", "add", "x<b>bold</b>"}, "SELECT prescient.job_class_add('x<b>bold</b>')",
       "the job class 'x<b>bold</b>' holds '<'" + rule},
      {{"jobs", "add", "a,b", "--worker"}, "SELECT prescient.declare_job_classes('{\"a,b\"}', '{plugin}')",
       "the job class 'a,b' holds ','" + rule},
      {{"limits", "set", "crm\tlimit", "--key", "job", "--rate", "5/s"},
       "SELECT prescient.limit_set(E'crm\\tlimit', 'job', 5)", "the limit's name 'crmU+0009limit' holds 'U+0009'" + rule},
      {{"cron", "add", "--id", "nightly;rm", "--spec", "@daily", "--job", "noop"},
       "SELECT prescient.cron_add('nightly;rm', '@daily', p_job => 'noop')",
       "id: the schedule id 'nightly;rm' holds ';'" + rule},
      {{"jobs", "add", "trailing "}, "SELECT prescient.job_class_add('trailing ')",
       "the job class 'trailing ' begins or ends with a space"},
  };
  for (const Door& door : doors) {
    INFO(door.sql);
    const ProcessResult cli = run(door.cli);
    CHECK(cli.exit_code == 2);
    CHECK_THAT(cli.err, Catch::Contains(door.message));
    const auto [state, message] = prescient::testing::sql_refusal(*db, door.sql);
    CHECK(state == "PR400");
    CHECK_THAT(message, Catch::Contains(door.message));
  }
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_class WHERE job ~ '[<,]| $'") == 0);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.flow_limit") == 0);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.cron_schedule") == 0);
  // What the rule lets through.
  CHECK(run({"jobs", "add", "orders.v2:ship/eu@acme+1 #=-"}).exit_code == 0);
  CHECK(run({"jobs", "add", "café résumé"}).exit_code == 0);
  CHECK(run({"limits", "set", "crm api", "--key", "job", "--rate", "5/s"}).exit_code == 0);
  CHECK(run({"cron", "add", "--id", "hourly report", "--spec", "@hourly", "--job", "noop"}).exit_code == 0);
}

TEST_CASE("jobs add, forget and set: the registry from the CLI, SQL's refusals on one line") {
  const std::string url = create_migrated_database();
  const auto run = [&](std::vector<std::string> args, const std::string& input = "") {
    return run_prescient(with_db(std::move(args), url), {}, input);
  };
  const ProcessResult added = run({"jobs", "add", "ship_py", "--worker", "--json"});
  REQUIRE(added.exit_code == 0);
  CHECK(json::parse(added.out) == json{{"job", "ship_py"}, {"status", "added"}});
  CHECK(run({"jobs", "add", "ship_py"}).out == "job class ship_py: known\n");
  const auto listed = json::parse(run({"jobs", "--json"}).out);
  const auto ship = std::find_if(listed.begin(), listed.end(), [](const json& c) { return c["name"] == "ship_py"; });
  REQUIRE(ship != listed.end());
  CHECK((*ship)["runs_in"] == "worker");
  CHECK((*ship)["origin"] == "worker");

  const std::vector<std::string> ship_check{"schedule", "--job", "ship_py", "--entity-name", "o", "--entity-key", "1",
                                            "--in", "1h", "--job-key", "ship-1"};
  REQUIRE(run(ship_check).exit_code == 0);
  // A class deployed after its checks are written: the caller says it knows better.
  const ProcessResult later = run({"schedule", "--job", "later", "--entity-name", "o", "--entity-key", "1", "--in",
                                   "1h", "--allow-unknown-class"});
  CHECK(later.exit_code == 0);
  const ProcessResult bulk =
      run({"schedule", "--file", "-"}, R"({"job": "later", "entity_name": "o", "entity_key": "2", "in": "1h"})" "\n");
  CHECK(bulk.exit_code == 2);
  CHECK_THAT(bulk.err, Catch::StartsWith("prescient: line 1: unknown job class 'later' (known: "));
  CHECK(run({"schedule", "--file", "-", "--allow-unknown-class"},
            R"({"job": "later", "entity_name": "o", "entity_key": "2", "in": "1h"})" "\n")
            .exit_code == 0);

  const ProcessResult set = run({"jobs", "set", "noop", "--max-checks", "unlimited", "--max-attempts", "3",
                                 "--backoff", "30s..1h", "--timeout", "30s", "--by", "ops", "--json"});
  REQUIRE(set.exit_code == 0);
  const json row = json::parse(set.out);
  CHECK(row["max_checks"] == 0);
  CHECK(row["max_attempts"] == 3);
  CHECK(row["backoff"] == "30s");
  CHECK(row["backoff_max"] == "1h");
  CHECK(row["timeout"] == "30s");
  CHECK(row["policy_updated_by"] == "ops");
  const ProcessResult cleared = run({"jobs", "set", "noop", "--clear", "timeout,max_checks"});
  CHECK(cleared.exit_code == 0);
  CHECK(cleared.out == "job class noop: max_checks=- max_attempts=3 backoff=30s backoff_max=1h timeout=-\n");

  check_refused({
      {{"jobs", "forget", "ship_py"}, "job class 'ship_py' has 1 pending check(s): cancel them first"},
      {{"jobs", "forget", "noop"}, "job class 'noop' is built in: it cannot be forgotten"},
      {{"jobs", "add", ""}, "the job class is empty"},
      {{"jobs", "set", "noop", "--max-attempts", "0"}, "max_attempts 0 is under 1"},
      {{"jobs", "set", "noop", "--max-checks", "-1"}, "max_checks -1 is negative (0: no limit)"},
      {{"jobs", "set", "noop", "--max-checks", "lots"}, "max_checks (a number or unlimited) 'lots' is not a whole number"},
      {{"jobs", "set", "noop", "--backoff", "1h..30s"}, "backoff_max 30s is under the backoff 1h"},
      {{"jobs", "set", "noop", "--timeout", "-5s"}, "timeout -5s is under a second"},
      {{"jobs", "set", "noop", "--timeout", "soon"}, "'soon'"},
      {{"jobs", "set", "noop", "--clear", "colour"}, "cannot clear 'colour'"},
      {{"jobs", "set", "noop", "--timeout", "5s", "--clear", "timeout"}, "timeout is both set and cleared"},
      {{"jobs", "set", "noop"}, "nothing to set"},
      {{"jobs", "frobnicate"}, "unknown jobs action 'frobnicate'"},
  }, url);
  const ProcessResult missing = run({"jobs", "set", "nope", "--timeout", "5s"});
  CHECK(missing.exit_code == 3);
  CHECK(missing.err == "prescient: no job class 'nope' (declare it with prescient jobs add)\n");

  REQUIRE(run({"cancel", "--job-key", "ship-1"}).exit_code == 0);
  const ProcessResult forgotten = run({"jobs", "forget", "ship_py", "--json"});
  CHECK(forgotten.exit_code == 0);
  CHECK(json::parse(forgotten.out) == json{{"job", "ship_py"}, {"status", "forgotten"}});
  CHECK(run(ship_check).exit_code == 2);
  CHECK(run({"jobs", "forget", "ship_py"}).exit_code == 3);
}

TEST_CASE("daemon --metrics-addr serves Prometheus metrics over HTTP while it fires") {
  const std::string url = create_migrated_database(1);
  std::string lines;
  for (int i = 0; i < 30; ++i) {
    lines += R"({"job": "emit", "entity_name": "e", "entity_key": ")" + std::to_string(i) +
             R"(", "at": "@1000000000", "payload": {"type": "ping"}})" + "\n";
  }
  REQUIRE(run_prescient(with_db({"schedule", "--file", "-"}, url), {}, lines).exit_code == 0);
  const int port = free_loopback_port();
  const std::string log = "/tmp/prescient-metrics-test-" + std::to_string(::getpid()) + ".log";
  const pid_t daemon = start_prescient(with_db({"daemon", "--runner-id", "metrics-test", "--metrics-addr",
                                                "127.0.0.1:" + std::to_string(port)},
                                               url),
                                       "/dev/null", log);
  // The checks are due at the next boundary of this 1 s grid: scrape until they are settled and the
  // pending counts are in (at most 10 s; a scrape may miss the counts, a later one has them).
  std::string metrics;
  for (int attempt = 0; attempt < 100; ++attempt) {
    metrics = http_get(port, "/metrics").value_or("");
    if (metrics.find("prescient_checks_settled_total{outcome=\"done\"} 30") != std::string::npos &&
        metrics.find("prescient_pending_checks{") != std::string::npos) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  INFO(metrics);
  INFO("the daemon's log: " << std::ifstream(log).rdbuf());
  CHECK_THAT(metrics, Catch::Contains("prescient_checks_claimed_total 30"));
  CHECK_THAT(metrics, Catch::Contains("prescient_checks_settled_total{outcome=\"done\"} 30"));
  CHECK_THAT(metrics, Catch::Contains("prescient_checks_settled_total{outcome=\"failed\"} 0"));
  CHECK_THAT(metrics, Catch::Contains("prescient_events_emitted_total 30"));
  CHECK_THAT(metrics, Catch::Contains("prescient_dead_letters_total 0"));
  CHECK_THAT(metrics, Catch::Contains("prescient_database_errors_total 0"));
  CHECK_THAT(metrics, Catch::Contains("prescient_slot_retries_total 0"));
  // The server runs on this machine: its clock is this host's, measured a round trip low (slightly < 0).
  const std::string offset_metric = "\nprescient_clock_offset_seconds ";
  const std::size_t offset_at = metrics.find(offset_metric);
  REQUIRE(offset_at != std::string::npos);
  const double offset = std::stod(metrics.substr(offset_at + offset_metric.size()));
  CHECK(offset < 0);
  CHECK(offset > -0.5);
  CHECK_THAT(metrics, Catch::Contains("prescient_runner_info{runner_id=\"metrics-test\",shard=\"0/1\"} 1"));
  CHECK_THAT(metrics, Catch::Contains("prescient_slot_first_claim_lag_seconds_count 1"));
  CHECK_THAT(metrics, Catch::Contains("prescient_slot_last_settle_lag_seconds_bucket{le=\"+Inf\"} 1"));
  CHECK_THAT(metrics, Catch::Contains("prescient_batch_duration_seconds_count"));
  // The pending counts are the figures the daemon counts in the background: before or after the slot settled.
  CHECK_THAT(metrics, Catch::Contains("prescient_queue_figures_age_seconds "));
  CHECK_THAT(metrics, Catch::Contains("prescient_pending_checks{horizon=\"due\"} 0") ||
                          Catch::Contains("prescient_pending_checks{horizon=\"due\"} 30"));
  CHECK_THAT(metrics, Catch::Contains("prescient_pending_checks{horizon=\"overdue\"} 0"));
  CHECK_THAT(metrics, Catch::Contains("prescient_pending_checks{horizon=\"next_week\"} 0"));
  REQUIRE(::kill(daemon, SIGTERM) == 0);
  CHECK(wait_for(daemon) == 0);
  ::unlink(log.c_str());

  const ProcessResult bad = run_prescient(with_db({"daemon", "--metrics-addr", "localhost"}, url));
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Catch::Contains("invalid --metrics-addr 'localhost'"));
}

namespace {

// Runs a bash script, its stdout and stderr captured apart (in files: bash alone, no pipes to juggle).
ProcessResult run_bash(const std::string& script) {
  const std::string base = "/tmp/prescient-bash-" + std::to_string(::getpid());
  const std::string command = "bash -c '" + script + "' >" + base + ".out 2>" + base + ".err";
  const int status = std::system(command.c_str());
  const auto read = [](const std::string& path) {
    std::ifstream file(path);
    std::string text{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
    ::unlink(path.c_str());
    return text;
  };
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read(base + ".out"), read(base + ".err")};
}

}  // namespace

TEST_CASE("demo.sh's web_get reads the dashboard's /metrics with its Host header, and fails loudly otherwise") {
  const std::string url = create_migrated_database(1);
  const int port = free_loopback_port();
  const std::string address = "127.0.0.1:" + std::to_string(port);
  const pid_t daemon = start_prescient(with_db({"daemon", "--runner-id", "web-get-test", "--web-addr", address}, url));
  bool serving = false;
  for (int attempt = 0; attempt < 100 && !serving; ++attempt) {
    serving = http_get(port, "/metrics").has_value();
    if (!serving) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  REQUIRE(serving);
  const std::string lib = ". " + std::string(PRESCIENT_SOURCE_DIR) + "/scripts/lib/web_get.sh && ";

  // What demo.sh used to send: no Host header, refused (DNS rebinding), which its `|| true` hid.
  const ProcessResult bare = run_bash("exec 3<>/dev/tcp/127.0.0.1/" + std::to_string(port) +
                                      " && printf \"GET /metrics HTTP/1.0\\r\\n\\r\\n\" >&3 && head -n 1 <&3");
  CHECK_THAT(bare.out, Catch::StartsWith("HTTP/1.1 403"));

  const ProcessResult metrics = run_bash(lib + "web_get " + address + " /metrics");
  CHECK(metrics.exit_code == 0);
  CHECK(metrics.err.empty());
  CHECK_THAT(metrics.out, Catch::StartsWith("# HELP") && Catch::Contains("\nprescient_checks_claimed_total "));

  const ProcessResult missing = run_bash(lib + "web_get " + address + " /no-such-page");
  CHECK(missing.exit_code == 1);
  CHECK(missing.out.empty());
  CHECK_THAT(missing.err, Catch::StartsWith("web_get: GET http://" + address + "/no-such-page answered 'HTTP/1.1 404"));
  CHECK(lines_of(missing.err).size() == 1);

  REQUIRE(::kill(daemon, SIGTERM) == 0);
  CHECK(wait_for(daemon) == 0);
  const ProcessResult gone = run_bash(lib + "web_get " + address + " /metrics");
  CHECK(gone.exit_code == 1);
  CHECK(gone.err == "web_get: cannot connect to http://" + address + "/metrics\n");
}

TEST_CASE("events --follow ends with one line on bad input, never an abort, with its signal thread running") {
  const std::string url = create_migrated_database(60);
  // An unparsable URL: found at its first connection, inside the loop that also waits for signals.
  const ProcessResult bad_url = run_prescient({"events", "--follow", "--db", "postgresql://%zz"});
  CHECK(bad_url.exit_code == 2);
  CHECK(lines_of(bad_url.err).size() == 1);
  CHECK_THAT(bad_url.err, Catch::Contains("invalid database URL"));
  // An event id that does not exist: not found, exit 3.
  const ProcessResult unknown = run_prescient(with_db({"events", "--follow", "--since", "no-such-event"}, url));
  CHECK(unknown.exit_code == 3);
  CHECK_THAT(unknown.err, Catch::Contains("no event with id 'no-such-event'"));
}

TEST_CASE("limits set, list and remove flow limits; bad input is refused with exit 2, nothing written") {
  const std::string url = create_migrated_database(1);
  const ProcessResult set = run_prescient(
      with_db({"limits", "set", "crm", "--key", "http_target", "--value", "crm", "--rate", "200/s", "--by", "ops"}, url));
  REQUIRE(set.exit_code == 0);
  CHECK(set.out == "limit crm: created\n");
  const ProcessResult both = run_prescient(with_db(
      {"limits", "set", "per-customer", "--key", "payload.customer", "--rate", "30/m", "--burst", "5",
       "--concurrency", "3", "--job", "http", "--json"},
      url));
  REQUIRE(both.exit_code == 0);
  CHECK(json::parse(both.out) == json{{"name", "per-customer"}, {"status", "created"}});
  CHECK(run_prescient(with_db({"limits", "set", "crm", "--key", "http_target", "--rate", "100/s"}, url)).out ==
        "limit crm: updated\n");

  const ProcessResult listed = run_prescient(with_db({"limits", "--json"}, url));
  REQUIRE(listed.exit_code == 0);
  const json limits = json::parse(listed.out);
  REQUIRE(limits.size() == 2);
  CHECK(limits[0]["name"] == "crm");
  CHECK(limits[0]["rate"] == "100/s");
  CHECK(limits[0]["key_value"].is_null());  // replaced whole: the value was not given again
  CHECK(limits[1]["rate"] == "30/m");
  CHECK(limits[1]["burst"] == 5);
  CHECK(limits[1]["concurrency"] == 3);
  CHECK(limits[1]["job"] == "http");
  CHECK(limits[1]["deferrals"] == json::array());
  CHECK(limits[1]["fair_share"] == false);
  CHECK(limits[1]["weights"].is_null());
  // The key's word before migration 0054: taken with a note on stderr, stored as the new word.
  const ProcessResult old_word =
      run_prescient(with_db({"limits", "set", "per-order", "--key", "entity", "--concurrency", "1"}, url));
  REQUIRE(old_word.exit_code == 0);
  CHECK(old_word.out == "limit per-order: created\n");
  CHECK_THAT(old_word.err, Catch::Contains("--key entity is deprecated") && Catch::Contains("entity_name"));
  CHECK(json::parse(run_prescient(with_db({"limits", "--json"}, url)).out)[2]["key"] == "entity_name");
  CHECK(run_prescient(with_db({"limits", "remove", "per-order"}, url)).exit_code == 0);
  const ProcessResult table = run_prescient(with_db({"limits", "list"}, url));
  CHECK_THAT(table.out, Catch::Contains("per-customer") && Catch::Contains("payload.customer") &&
                            Catch::Contains("30/m"));

  check_refused({
      {{"limits", "set", "x", "--key", "tenant", "--rate", "5/s"}, "unknown kind of key 'tenant'"},
      {{"limits", "set", "x", "--key", "job", "--rate", "0/s"}, "invalid rate '0/s'"},
      {{"limits", "set", "x", "--key", "job", "--rate", "-5/s"}, "invalid rate '-5/s'"},
      {{"limits", "set", "x", "--key", "job", "--rate", "5/fortnight"}, "invalid rate '5/fortnight'"},
      {{"limits", "set", "x", "--key", "job", "--concurrency", "0"}, "invalid concurrency 0"},
      {{"limits", "set", "x", "--key", "job", "--concurrency", "-2"}, "invalid concurrency -2"},
      {{"limits", "set", "x", "--key", "job", "--rate", "5/s", "--burst", "0"}, "invalid burst 0"},
      {{"limits", "set", "x", "--key", "job"}, "needs a rate, a concurrency, fair share or several"},
      {{"limits", "set", "x", "--key", "job", "--fair-share"}, "fair share takes a payload field as its key, not 'job'"},
      {{"limits", "set", "x", "--key", "payload.t", "--fair-share", "--value", "a"}, "no job class or key value"},
      {{"limits", "set", "x", "--rate", "5/s"}, "missing --key"},
      {{"limits", "set", "--key", "job", "--rate", "5/s"}, "missing the limit's name"},
      {{"limits", "drop", "x"}, "unknown limits action 'drop'"},
      {{"limits", "set", "x", "--key", "payload.t", "--rate", "5/s", "--weight", "a=2"}, "weights apply to fair share: the limit has none"},
      {{"limits", "set", "x", "--key", "payload.t", "--fair-share", "--weight", "a=0"},
       "the weight of 'a' must be a whole number from 1 to 1000, not 0"},
      {{"limits", "set", "x", "--key", "payload.t", "--fair-share", "--weight", "a"}, "invalid --weight 'a'"},
      {{"limits", "set", "x", "--key", "payload.t", "--fair-share", "--weight", "a=2", "--weight", "a=3"},
       "--weight names 'a' twice"},
  }, url);
  CHECK(json::parse(run_prescient(with_db({"limits", "--json"}, url)).out).size() == 2);  // nothing written

  // A check's trace shows its deferrals (a runner's record, written here by hand).
  const ProcessResult scheduled = run_prescient(with_db(
      {"schedule", "--job", "noop", "--entity-name", "order", "--entity-key", "1", "--in", "1h", "--json"}, url));
  REQUIRE(scheduled.exit_code == 0);
  const long long id = json::parse(scheduled.out)["id"];
  *connect_to(url) << "INSERT INTO prescient.flow_deferral (check_id, deferred_at, limit_name, key_value, until)"
                      " VALUES (:id, '2026-11-21T10:00:00Z', 'crm', 'acme', '2026-11-21T10:00:01.25Z')",
      soci::use(id);
  const ProcessResult shown = run_prescient(with_db({"show", "--id", std::to_string(id)}, url));
  CHECK_THAT(shown.out, Catch::Contains("  2026-11-21T10:00:00Z  check " + std::to_string(id) +
                                        " deferred by limit crm (acme) until 2026-11-21T10:00:01.25Z\n"));
  const json trace = json::parse(run_prescient(with_db({"show", "--id", std::to_string(id), "--json"}, url)).out);
  REQUIRE(trace["deferrals"].size() == 1);
  CHECK(trace["deferrals"][0]["limit"] == "crm");

  CHECK(run_prescient(with_db({"limits", "remove", "crm"}, url)).out == "limit crm: removed\n");
  const ProcessResult again = run_prescient(with_db({"limits", "remove", "crm"}, url));
  CHECK(again.exit_code == 3);
  CHECK_THAT(again.err, Catch::Contains("no limit named 'crm'"));
}

TEST_CASE("the CLI runs as the least-privilege logins: a client schedules and lists, a runner fires") {
  const std::string url = create_migrated_database(1);
  auto owner = connect_to(url);
  const Login client(*owner, "cli_client_" + std::to_string(::getpid()), "prescient_client");
  const Login runner(*owner, "cli_runner_" + std::to_string(::getpid()), "prescient_runner");
  const std::string client_url = as_user(url, client.name), runner_url = as_user(url, runner.name);
  const ProcessResult scheduled = run_prescient(
      {"schedule", "--db", client_url, "--job", "noop", "--entity-name", "o", "--entity-key", "1", "--in", "0s"});
  INFO(scheduled.err);
  REQUIRE(scheduled.exit_code == 0);
  const ProcessResult listed = run_prescient({"list", "--db", client_url, "--json"});
  INFO(listed.err);
  CHECK(listed.exit_code == 0);
  REQUIRE(json::parse(listed.out).size() == 1);
  // Until the check's slot is past (a sweep leaves the current slot to run-slot): the slot after it began.
  const auto slot = prescient::parse_time(json::parse(listed.out)[0]["next_check_at"].get<std::string>());
  std::this_thread::sleep_until(std::chrono::system_clock::time_point(slot + std::chrono::seconds(1)) +
                                std::chrono::milliseconds(50));
  const ProcessResult swept = run_prescient({"sweep", "--db", runner_url, "--json"});
  INFO(swept.err);
  CHECK(swept.exit_code == 0);
  CHECK(count_of(*owner, "SELECT count(*) FROM prescient.job_history WHERE outcome = 'done'") == 1);
  const ProcessResult fired = run_prescient({"run-slot", "--db", runner_url});
  INFO(fired.err);
  CHECK(fired.exit_code == 0);
}
