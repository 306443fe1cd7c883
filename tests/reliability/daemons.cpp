#include "daemons.hpp"

#include <signal.h>
#include <soci/soci.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "process.hpp"
#include "test_database.hpp"

namespace prescient::testing {

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

void create_ledger(soci::session& db) {
  db << "CREATE TABLE ledger (check_id bigint NOT NULL, slot timestamptz NOT NULL, ran_at timestamptz NOT NULL,"
        " runner_pid int NOT NULL)";
}

void wait_until_all_settled(soci::session& db, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (count_of(db, "SELECT count(*) FROM prescient.future_job") > 0) {
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
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
