#pragma once
// The worker clients in the fault tests: each language's conformance driver (jobs/workers/conformance,
// README.md), the client's real worker, which records every run in the table conformance_ledger and
// settles by the check's payload (none: done).
#include <sys/types.h>

#include <string>

namespace soci {
class session;
}

namespace prescient::testing {

// The table the drivers record each run in (jobs/workers/conformance/run.py makes the same).
void create_conformance_ledger(soci::session& db);

// Builds the Go client's driver (jobs/workers/go/build.sh) into `build_dir`/go: a directory of the caller's
// own, since two builds into one directory at once race on its files.
void build_go_driver(const std::string& build_dir);

// `conformance-driver work --name NAME --classes CLASS` of `language` (python, go, ...) on `url`, 2 handler
// threads and takes of at most 50 (as the daemons of these tests), the drivers' 2 s leases; the built
// drivers under `build_dir`, its log (standard error) to `log_path`. SIGKILLed when it goes, unless stopped.
class WorkerDriver {
 public:
  WorkerDriver(std::string language, std::string name, const std::string& job_class, const std::string& url,
               const std::string& build_dir, const std::string& log_path);
  ~WorkerDriver();
  WorkerDriver(const WorkerDriver&) = delete;
  WorkerDriver& operator=(const WorkerDriver&) = delete;
  const std::string& language() const { return language_; }
  const std::string& name() const { return name_; }
  // It has not exited on its own.
  bool running() const;
  // SIGTERM: it must stop gracefully (exit 0).
  void stop();

 private:
  std::string language_, name_;
  pid_t pid_;
};

}  // namespace prescient::testing
