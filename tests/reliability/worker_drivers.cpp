#include "worker_drivers.hpp"

#include <signal.h>
#include <soci/soci.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>

#include "daemons.hpp"
#include "process.hpp"

namespace prescient::testing {

void create_conformance_ledger(soci::session& db) {
  db << "CREATE TABLE conformance_ledger (check_id bigint, worker text, language text, due_at timestamptz,"
        " check_count integer, started_at timestamptz DEFAULT clock_timestamp())";
}

void build_go_driver(const std::string& build_dir) {
  // The compiled packages come from the build cache the workers' own build fills (the Go cache is safe for
  // builds at once): pgx compiled once, not once more for this.
  shell("PRESCIENT_WORKERS_BUILD_DIR='" + build_dir + "' GOCACHE='" PRESCIENT_GO_CACHE "' " PRESCIENT_SOURCE_DIR
        "/jobs/workers/go/build.sh >'" + build_dir + "/go-build.log' 2>&1");
}

WorkerDriver::WorkerDriver(std::string language, std::string name, const std::string& job_class,
                           const std::string& url, const std::string& build_dir, const std::string& log_path)
    : language_(std::move(language)), name_(std::move(name)) {
  pid_ = start_process({PRESCIENT_SOURCE_DIR "/jobs/workers/" + language_ + "/conformance-driver", "work", "--name",
                        name_, "--classes", job_class, "--concurrency", "2", "--batch", "50"},
                       {{"PRESCIENT_DATABASE_URL", url}, {"PRESCIENT_WORKERS_BUILD_DIR", build_dir}}, "/dev/null",
                       log_path);
}

WorkerDriver::~WorkerDriver() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

bool WorkerDriver::running() const { return pid_ > 0 && ::waitpid(pid_, nullptr, WNOHANG) == 0; }

void WorkerDriver::stop() {
  REQUIRE(::kill(pid_, SIGTERM) == 0);
  INFO("the " << language_ << " worker " << name_);
  CHECK(wait_for(pid_) == 0);
  pid_ = -1;
}

}  // namespace prescient::testing
