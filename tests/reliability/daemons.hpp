#pragma once
// What the fault tests share: real prescient daemons as child processes, the ledger of runs (an external
// effect the `ledger` test class records outside the settlement), and the sizes of a run.
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace soci {
class session;
}

namespace prescient::testing {

// PRESCIENT_SOAK=1 (scripts/test.sh --soak): the fault tests at full size.
bool soak();

// Output of a shell command (the scripts the fault tests drive); fails the test when it fails.
std::string shell(const std::string& command);

// `text` without the newlines and spaces at its end (a script's one-line answer).
std::string trimmed(std::string text);

// The table the `ledger` class records each run in: check id, slot, the server's time, the runner's pid.
void create_ledger(soci::session& db);

// Fails the test unless every pending check is settled within `limit`.
void wait_until_all_settled(soci::session& db, std::chrono::seconds limit);
// Until a first check is in the history: the daemons are under way, in their first slot.
void wait_until_some_settled(soci::session& db, std::chrono::seconds limit);

// Fails the test unless `count` runners have each completed a slot (prescient.runner_seen) within `limit`:
// the daemons are up and firing, so a slot planned from now on is not run late by their start-up.
void wait_until_runners_seen(soci::session& db, int count, std::chrono::seconds limit);

// `checks` ledger checks spread over `slots` slots two seconds apart, the first about three seconds ahead.
void schedule_spread(soci::session& db, long checks, int slots);

// The ledger's verdict. `faulty` are the runner pids a fault hit (killed, or sessions cut); a check may
// have run more than once only by one of them, and at most `max_runs` times.
void verify_ledger(soci::session& db, long checks, const std::set<int>& faulty, int max_runs);

// A private cluster of scripts/pg.sh in a directory of its own; stopped (if still up) and removed when it
// goes.
class Cluster {
 public:
  explicit Cluster(const std::string& name);
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;
  std::string start();
  std::string start_standby_of(const Cluster& primary);
  void crash();
  void restart();
  void promote();
  const std::string& url() const { return url_; }
  std::string port() const;

 private:
  std::filesystem::path dir_;
  std::string script_;
  std::string url_;
};

// `count` daemons with the test plugins, 2 workers and batches of 50, plus `extra` arguments; SIGKILLed
// when the object goes (unless stopped).
class Daemons {
 public:
  Daemons(std::string url, int count, std::vector<std::string> extra = {});
  ~Daemons();
  Daemons(const Daemons&) = delete;
  Daemons& operator=(const Daemons&) = delete;
  // SIGKILLs one at random and starts a replacement; returns the killed pid.
  pid_t kill_one(std::mt19937& random);
  pid_t pid(std::size_t i) const { return pids_.at(i); }
  // None has exited on its own.
  bool all_running() const;
  // SIGTERM to each: every one must stop cleanly (exit 0).
  void stop();

 private:
  pid_t start();
  std::string url_;
  std::vector<std::string> extra_;
  std::vector<pid_t> pids_;
};

}  // namespace prescient::testing
