// Fault tests: real prescient daemons (child processes) on a real PostgreSQL, attacked while they work.
// Each ends by checking every check against a ledger of runs (an external effect the `ledger` test
// class records outside the settlement): settled exactly once; run again only after a fault took
// its runner or its session; none lost; none run before its slot.
// Sizes are reduced for scripts/test.sh; PRESCIENT_SOAK=1 (scripts/test.sh --soak) runs them in full.
#include <signal.h>
#include <soci/soci.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <thread>

#include "builtin_jobs.hpp"
#include "daemons.hpp"
#include "prescient/client.hpp"
#include "prescient/clock.hpp"
#include "prescient/daemon.hpp"
#include "prescient/checks.hpp"
#include "prescient/settings.hpp"
#include "prescient/time_text.hpp"
#include "process.hpp"
#include "test_database.hpp"
#include "wait.hpp"

using namespace prescient;
using namespace prescient::jobs;
using namespace prescient::testing;
using namespace std::chrono_literals;

namespace {

// Resident memory of a process, in kB (VmRSS in /proc/<pid>/status).
long resident_kb(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

}  // namespace

TEST_CASE("SIGKILLed runners, again and again: every check settled once, none lost, none early") {
  const long checks = soak() ? 50000 : 3000;
  const int slots = soak() ? 20 : 8;
  const int kills = soak() ? 25 : 8;
  const std::string url = create_migrated_database(1);
  auto db = connect_to(url);
  create_ledger(*db);
  schedule_spread(*db, checks, slots);

  std::set<int> killed;
  std::mt19937 random(std::random_device{}());
  {
    Daemons daemons(url, 3);
    wait_until_some_settled(*db, 30s);  // the first slot
    const auto window = std::chrono::steady_clock::now() + std::chrono::seconds(2 * slots);
    while (static_cast<int>(killed.size()) < kills && std::chrono::steady_clock::now() < window) {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(150, 900)(random)));
      killed.insert(daemons.kill_one(random));
    }
    wait_until_all_settled(*db, soak() ? 300s : 60s);
    CHECK(daemons.all_running());
    daemons.stop();
  }
  INFO("kills: " << killed.size());
  CHECK(static_cast<int>(killed.size()) == kills);
  verify_ledger(*db, checks, killed, 1 + kills);
  // Runs repeated at all: only the killed runners' in-flight batches (2 workers x 50 each).
  CHECK(count_of(*db, "SELECT count(*) - count(DISTINCT check_id) FROM ledger") <= kills * 100);
}

TEST_CASE("server-side session kills mid-claim and mid-settle: daemons carry on, nothing lost") {
  const long checks = soak() ? 20000 : 2000;
  const int slots = 6;
  const std::string url = create_migrated_database(1);
  auto db = connect_to(url);
  create_ledger(*db);
  schedule_spread(*db, checks, slots);
  std::set<int> hit;
  {
    Daemons daemons(url, 2);
    wait_until_some_settled(*db, 30s);  // the first slot
    for (int round = 0; round < 6; ++round) {
      std::this_thread::sleep_for(std::chrono::milliseconds(350 + 250 * round));
      // Every session of this database but ours: claims, settlements, the jobs' own sessions.
      soci::rowset<int> pids = (db->prepare << "SELECT pid FROM pg_stat_activity"
                                               " WHERE datname = current_database() AND pid <> pg_backend_pid()");
      for (const int pid : pids) {
        long long done = 0;
        *db << "SELECT count(*) FROM (SELECT pg_terminate_backend(:pid)) t", soci::use(pid), soci::into(done);
      }
    }
    wait_until_all_settled(*db, 120s);
    CHECK(daemons.all_running());
    // A cut session may belong to any runner: every run counts as hit by a fault.
    soci::rowset<int> runners = (db->prepare << "SELECT DISTINCT runner_pid FROM ledger");
    for (const int pid : runners) hit.insert(pid);
    daemons.stop();
  }
  verify_ledger(*db, checks, hit, 1 + 6);
}

TEST_CASE("jobs that hang or throw: retried, then failed; the rest of their slots unaffected") {
  const std::string url = create_migrated_database(1);
  auto db = connect_to(url);
  *db << "UPDATE prescient.settings SET job_timeout_seconds = 1, max_attempts = 2";
  create_ledger(*db);
  schedule_spread(*db, 400, 2);
  {
    SystemClock clock;
    Client client(*db, {.clock = &clock});
    for (const char* job : {"hang", "throws"}) {
      for (int i = 0; i < 3; ++i) {
        client.schedule({.job = job, .entity_name = "fault", .entity_key = job + std::to_string(i), .in = 3s});
      }
    }
  }
  {
    Daemons daemons(url, 2);
    wait_until_all_settled(*db, 90s);
    CHECK(daemons.all_running());
    daemons.stop();
  }
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history WHERE job = 'ledger' AND outcome = 'done'") == 400);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history WHERE job IN ('hang', 'throws')"
                      " AND outcome = 'failed' AND attempts = 2") == 6);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history WHERE job = 'hang'"
                      " AND last_error LIKE 'did not return within its timeout of 1s%'") == 3);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history WHERE job = 'throws'"
                      " AND last_error LIKE 'check % exploded'") == 3);
  CHECK(count_of(*db, "SELECT count(*) FROM ledger WHERE ran_at < slot") == 0);
}

TEST_CASE("soak: a daemon under a steady enqueuer keeps its memory and connections flat") {
  const auto run_for = soak() ? std::chrono::seconds(600) : std::chrono::seconds(20);
  const std::string url = create_migrated_database(1);
  auto db = connect_to(url);
  create_ledger(*db);
  SystemClock clock;
  Client client(*db, {.clock = &clock});
  Daemons daemons(url, 1);
  // Client sessions only: an autovacuum worker on the history shows in pg_stat_activity with the
  // database's name too, and comes and goes as it likes.
  const auto connections = [&] {
    return count_of(*db, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                         " AND backend_type = 'client backend' AND pid <> pg_backend_pid()");
  };
  long enqueued = 0;
  long rss_warm = 0;
  // A job's own session opens when its executor thread first runs a job that asks for one, so the
  // count climbs to its bound while the load starts. Flat means the second half never goes past the
  // peak of the first.
  long long connections_first_half = 0, connections_second_half = 0;
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < run_for) {
    std::vector<ScheduleRequest> batch;
    for (int i = 0; i < 50; ++i, ++enqueued) {
      batch.push_back({.job = (enqueued % 2 == 0) ? "ledger" : "emit", .entity_name = "soak",
                       .entity_key = std::to_string(enqueued), .in = std::chrono::seconds(1 + enqueued % 3),
                       .payload = {{"type", "soak"}}});
    }
    client.schedule_many(batch);
    std::this_thread::sleep_for(100ms);
    const auto elapsed = std::chrono::steady_clock::now() - start;
    if (rss_warm == 0 && elapsed > run_for / 4) rss_warm = resident_kb(daemons.pid(0));
    auto& peak = elapsed < run_for / 2 ? connections_first_half : connections_second_half;
    peak = std::max(peak, connections());
  }
  wait_until_all_settled(*db, 60s);
  const long rss_end = resident_kb(daemons.pid(0));
  connections_second_half = std::max(connections_second_half, connections());
  INFO("enqueued " << enqueued << ", RSS after warm-up " << rss_warm << " kB, at the end " << rss_end
                   << " kB; connections at most " << connections_first_half << " in the first half, "
                   << connections_second_half << " in the second");
  CHECK(rss_warm > 0);
#if !defined(__SANITIZE_ADDRESS__)
  // Flat: within 20 % (or 8 MB) of its size after warm-up. Not under ASan (scripts/test.sh
  // --sanitize), whose quarantine keeps freed memory resident by design; LeakSanitizer covers leaks.
  CHECK(rss_end <= rss_warm + std::max(rss_warm / 5, 8192L));
#endif
  CHECK(connections_first_half > 0);
  CHECK(connections_second_half <= connections_first_half);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history WHERE outcome = 'done'") == enqueued);
  CHECK(daemons.all_running());
  daemons.stop();
}

TEST_CASE("PostgreSQL restarted under running daemons: they back off, reconnect and finish the work") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("prescient-restart-" + std::to_string(::getpid()));
  const std::string env = "PRESCIENT_PGDATA=" + (dir / "pg").string() + " ";
  const std::string pg = env + PRESCIENT_SOURCE_DIR "/scripts/pg.sh";
  std::string url = shell(pg + " start 2>/dev/null");
  while (!url.empty() && (url.back() == '\n' || url.back() == ' ')) url.pop_back();
  struct StopCluster {
    std::string pg;
    std::filesystem::path dir;
    ~StopCluster() {
      // Whatever its status: a cluster that is down already is what this wants.
      [[maybe_unused]] const int stopped = std::system((pg + " stop >/dev/null 2>&1").c_str());
      std::filesystem::remove_all(dir);
    }
  } stop_cluster{pg, dir};
  REQUIRE(run_prescient({"migrate", "--slot", "1s", "--db", url}).exit_code == 0);

  const long checks = soak() ? 10000 : 1500;
  auto db = connect_to(url);
  declare_test_classes(*db);
  create_ledger(*db);
  schedule_spread(*db, checks, 6);
  db.reset();
  std::set<int> hit;
  {
    Daemons daemons(url, 2);
    db = connect_to(url);
    wait_until_some_settled(*db, 30s);  // under way
    shell(pg + " restart 2>/dev/null");  // waits until the server takes connections again
    db = connect_to(url);
    wait_until_all_settled(*db, 120s);
    CHECK(daemons.all_running());  // the daemons did not exit for a lost server
    soci::rowset<int> runners = (db->prepare << "SELECT DISTINCT runner_pid FROM ledger");
    for (const int pid : runners) hit.insert(pid);
    daemons.stop();
  }
  verify_ledger(*db, checks, hit, 2);
}

TEST_CASE("a read-only database: run-slot and schedule fail with one clear line, nothing half-written") {
  const std::string url = create_migrated_database(60);
  auto db = connect_to(url);
  ManualClock clock(parse_time("2026-11-21T10:00:00Z"));
  Client client(*db, {.clock = &clock});
  for (int i = 0; i < 10; ++i) {
    client.schedule({.job = "noop", .entity_name = "ro", .entity_key = std::to_string(i),
                     .at = parse_time("2026-11-21T10:05:00Z")});
  }
  std::string name;
  *db << "SELECT current_database()", soci::into(name);
  *db << "ALTER DATABASE \"" + name + "\" SET default_transaction_read_only = on";

  const auto run = run_prescient({"run-slot", "--slot", "2026-11-21T10:05:00Z", "--db", url});
  CHECK(run.exit_code == 1);
  CHECK_THAT(run.err, Catch::Contains("read-only"));
  CHECK(lines_of(run.err).size() == 1);
  const auto schedule = run_prescient({"schedule", "--job", "noop", "--entity-name", "ro", "--entity-key", "new", "--in",
                                       "1h", "--db", url});
  CHECK(schedule.exit_code == 1);
  CHECK_THAT(schedule.err, Catch::Contains("read-only"));

  auto fresh = connect_to(url);  // the setting applies to sessions opened after it, like the CLI's
  CHECK(count_of(*fresh, "SELECT count(*) FROM prescient.future_job") == 10);
  CHECK(count_of(*fresh, "SELECT count(*) FROM prescient.job_history") == 0);
  CHECK(count_of(*fresh, "SELECT count(*) FROM prescient.event") == 0);
}

namespace {

// Moves the manual clock to each boundary the daemon waits for, except at the scripted waits, where
// the clock jumps to a given instant instead (forwards or backwards) and a hook may run.
class JumpingClockWaiter final : public Waiter {
 public:
  struct Jump {
    TimePoint when_asked_for;  // the wait for this boundary jumps instead
    TimePoint to;
  };
  JumpingClockWaiter(ManualClock& clock, std::vector<Jump> jumps, TimePoint stop_at)
      : clock_(clock), jumps_(std::move(jumps)), stop_at_(stop_at) {}
  std::function<void(TimePoint)> on_wait;  // called with the clock after each wait

  bool wait_until(TimePoint t) override {
    if (stopped() || clock_.now() >= stop_at_) {
      stop();
      return false;
    }
    // A boundary already passed returns at once; a future one wakes a little late, as a real wake-up does.
    TimePoint to = t <= clock_.now() ? clock_.now() : t + std::chrono::seconds{2};
    for (auto jump = jumps_.begin(); jump != jumps_.end(); ++jump) {
      if (jump->when_asked_for == t) {
        to = jump->to;
        jumps_.erase(jump);
        break;
      }
    }
    clock_.set(to);
    if (on_wait) on_wait(to);
    return true;
  }

 private:
  ManualClock& clock_;
  std::vector<Jump> jumps_;
  TimePoint stop_at_;
};

}  // namespace

TEST_CASE("clock jumps of an hour: nothing fires before its slot; missed slots are caught up") {
  const std::string url = create_migrated_database(60);
  auto db = connect_to(url);
  ManualClock clock(parse_time("2026-11-21T10:00:00Z"));
  Client client(*db, {.clock = &clock});
  for (const char* at : {"2026-11-21T10:05:00Z", "2026-11-21T11:30:00Z", "2026-11-21T11:40:00Z",
                         "2026-11-21T12:00:00Z"}) {
    client.schedule({.job = "noop", .entity_name = "clock", .entity_key = at, .job_key = at, .at = parse_time(at)});
  }
  Registry registry;
  register_builtin_jobs(registry);
  JumpingClockWaiter waiter(clock,
                            {// Forwards: the wait for 10:20 wakes at 11:35 (10:20 .. 11:35 were missed).
                             {parse_time("2026-11-21T10:20:00Z"), parse_time("2026-11-21T11:35:00Z")},
                             // Backwards: the wait for 11:45 wakes at 10:45.
                             {parse_time("2026-11-21T11:45:00Z"), parse_time("2026-11-21T10:45:00Z")}},
                            parse_time("2026-11-21T12:05:00Z"));
  bool added = false;
  waiter.on_wait = [&](TimePoint now) {
    // Once the clock is back at 10:50, an application schedules a check for 11:00 (by its clock, which
    // agrees): it must run at 11:00, not when the clock catches up with the daemon's old position.
    if (!added && now >= parse_time("2026-11-21T10:50:00Z") && now < parse_time("2026-11-21T11:00:00Z")) {
      auto app = connect_to(url);
      ManualClock app_clock(now);
      Client(*app, {.clock = &app_clock})
          .schedule({.job = "noop", .entity_name = "clock", .entity_key = "added", .job_key = "added",
                     .at = parse_time("2026-11-21T11:00:00Z")});
      added = true;
    }
  };
  Daemon daemon({.database_url = url, .runner_id = "jumpy", .workers = 1}, registry, clock, waiter);
  daemon.run();

  REQUIRE(added);
  Checks store(*db);
  const auto history = store.history({.limit = 100});
  REQUIRE(history.size() == 5);
  for (const auto& h : history) {
    INFO(h.job_key.value_or("?") << " due " << format_time(h.last_check_at) << " ran " << format_time(h.finished_at));
    CHECK(h.finished_at >= h.last_check_at);  // by the runner's clock, never before its slot
    CHECK(h.outcome == Outcome::done);
  }
  const auto finished = [&](const char* key) { return store.history({.job_key = std::string(key)}).at(0).finished_at; };
  CHECK(finished("2026-11-21T11:30:00Z") < parse_time("2026-11-21T11:36:00Z"));  // caught up after the jump
  CHECK(finished("added") < parse_time("2026-11-21T11:02:00Z"));  // on time after the clock went back
  CHECK(finished("2026-11-21T12:00:00Z") >= parse_time("2026-11-21T12:00:00Z"));
}
