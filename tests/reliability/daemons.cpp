#include "daemons.hpp"

#include <signal.h>
#include <soci/soci.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <thread>

#include "prescient/client.hpp"
#include "prescient/clock.hpp"
#include "process.hpp"
#include "test_database.hpp"
#include "wait.hpp"

namespace prescient::testing {

using namespace std::chrono_literals;

bool soak() {
  const char* value = std::getenv("PRESCIENT_SOAK");
  return value != nullptr && std::string(value) == "1";
}

std::string shell(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  while (const std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
  INFO(command);
  REQUIRE(::pclose(pipe) == 0);
  return out;
}

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

void create_ledger(soci::session& db) {
  db << "CREATE TABLE ledger (check_id bigint NOT NULL, slot timestamptz NOT NULL, ran_at timestamptz NOT NULL,"
        " runner_pid int NOT NULL)";
}

void wait_until_all_settled(soci::session& db, std::chrono::seconds limit) {
  wait_until("every check to settle", limit,
             [&] { return count_of(db, "SELECT count(*) FROM prescient.future_job") == 0; }, 200ms);
}

void wait_until_some_settled(soci::session& db, std::chrono::seconds limit) {
  wait_until("a first check to settle", limit,
             [&] { return count_of(db, "SELECT count(*) FROM prescient.job_history") > 0; });
}

void wait_until_runners_seen(soci::session& db, int count, std::chrono::seconds limit) {
  wait_until(std::to_string(count) + " runners to be seen", limit,
             [&] { return count_of(db, "SELECT count(*) FROM prescient.runner_seen") >= count; }, 200ms);
}

// `checks` ledger checks spread over `slots` slots two seconds apart, the first about three seconds ahead.
void schedule_spread(soci::session& db, long checks, int slots) {
  SystemClock clock;
  Client client(db, {.clock = &clock});
  const TimePoint first = std::chrono::ceil<std::chrono::seconds>(clock.now() + 3s);
  std::vector<ScheduleRequest> requests;
  for (long i = 0; i < checks; ++i) {
    requests.push_back({.job = "ledger", .entity_name = "fault", .entity_key = std::to_string(i),
                        .at = first + std::chrono::seconds(2 * (i % slots)), .payload = {{"sleep_ms", 1}}});
  }
  client.schedule_many(requests);
}

// The ledger's verdict. `faulty` are the runner pids a fault hit (killed, or sessions cut); a check may
// have run more than once only by one of them, and at most `max_runs` times.
void verify_ledger(soci::session& db, long checks, const std::set<int>& faulty, int max_runs) {
  CHECK(count_of(db, "SELECT count(*) FROM prescient.future_job") == 0);
  CHECK(count_of(db, "SELECT count(*) FROM prescient.job_history") == checks);
  CHECK(count_of(db, "SELECT count(DISTINCT id) FROM prescient.job_history WHERE outcome = 'done'") == checks);
  CHECK(count_of(db, "SELECT count(DISTINCT check_id) FROM ledger") == checks);
  CHECK(count_of(db, "SELECT count(*) FROM ledger WHERE ran_at < slot") == 0);
  CHECK(count_of(db, "SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM ledger GROUP BY check_id) r") <=
        max_runs);
  // Runs by a runner other than the one that settled the check: each must be by a faulty one.
  std::string faulty_list = "{";
  for (const int pid : faulty) faulty_list += (faulty_list.size() > 1 ? "," : "") + std::to_string(pid);
  faulty_list += "}";
  long long unexplained = 0;
  db << "SELECT count(*) FROM ledger l JOIN prescient.job_history h ON h.id = l.check_id"
        " WHERE l.runner_pid <> split_part(h.finished_by, ':', 2)::int AND l.runner_pid <> ALL (:faulty::int[])",
      soci::into(unexplained), soci::use(faulty_list);
  CHECK(unexplained == 0);
}

Cluster::Cluster(const std::string& name)
    : dir_(std::filesystem::temp_directory_path() / ("prescient-" + name + "-" + std::to_string(::getpid()))),
      script_("PRESCIENT_PGDATA=" + dir_.string() + " " PRESCIENT_SOURCE_DIR "/scripts/pg.sh") {}

Cluster::~Cluster() {
  // Whatever its status: a cluster that is down already is what this wants.
  [[maybe_unused]] const int stopped = std::system((script_ + " stop >/dev/null 2>&1").c_str());
  std::filesystem::remove_all(dir_);
}

std::string Cluster::start() { return url_ = trimmed(shell(script_ + " start 2>/dev/null")); }
std::string Cluster::start_standby_of(const Cluster& primary) {
  return url_ = trimmed(shell(script_ + " standby " + primary.port() + " 2>/dev/null"));
}
void Cluster::crash() { shell(script_ + " crash 2>/dev/null"); }
void Cluster::restart() { shell(script_ + " restart 2>/dev/null"); }
void Cluster::promote() { shell(script_ + " promote 2>/dev/null"); }
std::string Cluster::port() const {
  return url_.substr(url_.rfind(':') + 1, url_.rfind('/') - url_.rfind(':') - 1);
}

Daemons::Daemons(std::string url, int count, std::vector<std::string> extra)
    : url_(std::move(url)), extra_(std::move(extra)) {
  for (int i = 0; i < count; ++i) pids_.push_back(start());
}

Daemons::~Daemons() {
  for (const pid_t pid : pids_) {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
}

pid_t Daemons::kill_one(std::mt19937& random) {
  const std::size_t which = std::uniform_int_distribution<std::size_t>(0, pids_.size() - 1)(random);
  const pid_t victim = pids_[which];
  REQUIRE(::kill(victim, SIGKILL) == 0);
  REQUIRE(wait_for(victim) == 128 + SIGKILL);
  pids_[which] = start();
  return victim;
}

bool Daemons::all_running() const {
  for (const pid_t pid : pids_) {
    if (::waitpid(pid, nullptr, WNOHANG) != 0) return false;
  }
  return true;
}

void Daemons::stop() {
  for (pid_t& pid : pids_) {
    REQUIRE(::kill(pid, SIGTERM) == 0);
    CHECK(wait_for(pid) == 0);
    pid = -1;
  }
}

pid_t Daemons::start() {
  std::vector<std::string> args{"daemon", "--db",    url_, "--plugins", PRESCIENT_TEST_PLUGINS, "--workers", "2",
                                "--batch", "50", "--log-level", "warn"};
  args.insert(args.end(), extra_.begin(), extra_.end());
  return start_prescient(args);
}

}  // namespace prescient::testing
