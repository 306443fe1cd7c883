// Production topologies (docs/operations.md, "Topologies"), each with the real programs on loopback:
// PgBouncer (Debian's) in transaction and session mode in front of the test cluster.
#include <signal.h>
#include <soci/soci.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "daemons.hpp"
#include "prescient/client.hpp"
#include "prescient/clock.hpp"
#include "prescient/database.hpp"
#include "prescient/time_text.hpp"
#include "process.hpp"
#include "test_database.hpp"

using namespace prescient;
using namespace prescient::testing;
using namespace std::chrono_literals;

namespace {

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// scripts/pgbouncer.sh in front of the server a URL names, for one test; stopped when it goes.
class PgBouncer {
 public:
  PgBouncer(const std::string& mode, const std::string& server_url)
      : dir_(std::filesystem::temp_directory_path() / ("prescient-pgbouncer-" + std::to_string(::getpid()))),
        script_("PRESCIENT_PGBOUNCER_DIR=" + dir_.string() + " " PRESCIENT_SOURCE_DIR "/scripts/pgbouncer.sh") {
    port_ = trimmed(shell(script_ + " start " + mode + " " + connection_option(server_url, "port")));
  }
  ~PgBouncer() {
    std::system((script_ + " stop >/dev/null 2>&1").c_str());
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
void drain_through(const std::string& mode, const std::vector<std::string>& daemon_flags) {
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
        {"schedule", "--db", pooled, "--plugins", PRESCIENT_TEST_PLUGINS, "--job", "slow_ledger", "--entity-name", "slow", "--entity-key",
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
  drain_through("transaction", {});
}

TEST_CASE("behind PgBouncer in session mode: prepared statements, everything drains once") {
  drain_through("session", {"--prepared-statements", "on"});
}

TEST_CASE("behind PgBouncer in transaction mode, prepared statements forced on: slots fail, saying what to do") {
  const std::string direct = create_migrated_database(1);
  const PgBouncer bouncer("transaction", direct);
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
  std::this_thread::sleep_for(6s);
  ::kill(daemon, SIGTERM);
  wait_for(daemon);
  const std::string said = read_file(log);
  std::filesystem::remove(log);
  INFO(said);
  CHECK(said.find("--prepared-statements off") != std::string::npos);
}
