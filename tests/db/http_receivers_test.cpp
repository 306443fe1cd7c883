// The receivers docs/http.md gives (Python and Node, standard library only), extracted from the page and
// run as written: they verify the signature prescient computes, and their answers settle real checks.
#include <catch2/catch.hpp>
#include <httplib.h>
#include <signal.h>
#include <soci/soci.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "builtin_jobs.hpp"
#include "http.hpp"
#include "prescient/clock.hpp"
#include "prescient/registry.hpp"
#include "prescient/slot_runner.hpp"
#include "test_database.hpp"

extern char** environ;

using namespace prescient;
using namespace prescient::jobs;
using namespace std::chrono_literals;
using prescient::testing::connect_to;
using prescient::testing::count_of;
using prescient::testing::create_migrated_database;
using prescient::testing::free_loopback_port;

namespace {

const std::string kReceiverSecret = "receiver-test-secret";

// The first fenced block of `language` in docs/http.md.
std::string code_block(const std::string& language) {
  std::ifstream in(std::string(PRESCIENT_SOURCE_DIR) + "/docs/http.md");
  std::stringstream page;
  page << in.rdbuf();
  const std::string text = page.str(), fence = "```" + language + "\n";
  const auto start = text.find(fence);
  REQUIRE(start != std::string::npos);
  const auto end = text.find("```\n", start + fence.size());
  return text.substr(start + fence.size(), end - start - fence.size());
}

// The receiver as a child process on a free port, stopped when it goes out of scope.
class ReceiverProcess {
 public:
  ReceiverProcess(const std::string& interpreter, const std::string& language, const std::string& file)
      : port_(free_loopback_port()) {
    const std::string path = "/tmp/prescient-receiver-" + std::to_string(::getpid()) + "-" + file;
    std::ofstream(path) << code_block(language);
    ::setenv("PORT", std::to_string(port_).c_str(), 1);
    ::setenv("SECRET", kReceiverSecret.c_str(), 1);
    std::vector<char*> argv{const_cast<char*>(interpreter.c_str()), const_cast<char*>(path.c_str()), nullptr};
    REQUIRE(::posix_spawnp(&pid_, interpreter.c_str(), nullptr, nullptr, argv.data(), environ) == 0);
    for (int i = 0; i < 100; ++i) {
      httplib::Client client("127.0.0.1", port_);
      if (const auto answer = client.Post("/hooks/done", "{}", "application/json")) {
        // Unsigned: refused.
        CHECK(answer->status == 401);
        CHECK(answer->body == "bad signature");
        return;
      }
      std::this_thread::sleep_for(100ms);
    }
    FAIL(interpreter << " " << path << " did not start");
  }
  ~ReceiverProcess() {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
  int port() const { return port_; }

 private:
  int port_;
  pid_t pid_ = -1;
};

void answers_checks(const std::string& interpreter, const std::string& language, const std::string& file) {
  const std::string url = create_migrated_database(60);
  auto db = connect_to(url);
  const ReceiverProcess receiver(interpreter, language, file);
  auto targets = std::make_shared<HttpTargets>();
  (*targets)["app"] = {.name = "app", .base_url = "http://127.0.0.1:" + std::to_string(receiver.port()) + "/hooks",
                       .secret = kReceiverSecret, .timeout = 5s, .max_concurrent = 4, .ca_file = std::nullopt};
  Registry registry;
  register_builtin_jobs(registry, {.commands_dir = std::nullopt, .http_targets = targets});
  // Due in the current slot of the real clock: the receivers refuse a timestamp 5 minutes off theirs.
  *db << "SELECT prescient.schedule('http', 'order', p, date_trunc('minute', now()),"
         "  p_payload => jsonb_build_object('target', 'app', 'path', '/' || p), p_now => now() - interval '1 minute')"
         "  FROM unnest(ARRAY['done', 'later', 'busy', 'unknown']) p";
  long long slot_us = 0;
  *db << "SELECT prescient.us(min(next_check_at)) FROM prescient.future_job", soci::into(slot_us);
  const SystemClock clock;
  SlotRunner runner({.database_url = url, .runner_id = "r"}, registry, clock);
  const SlotReport report = runner.run_slot(from_unix_micros(slot_us));
  CHECK(report.claimed == 4);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history WHERE entity_key = 'done' AND outcome = 'done'") == 1);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job WHERE entity_key = 'later'"
                      " AND next_check_at BETWEEN now() + interval '23 hours' AND now() + interval '25 hours'") == 1);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.event WHERE type = 'order.late'") == 1);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job WHERE entity_key = 'busy' AND attempts = 0"
                      " AND next_check_at >= now() + interval '9 minutes'") == 1);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job WHERE entity_key = 'unknown' AND attempts = 1"
                      " AND last_error LIKE '%HTTP 404: no such check%'") == 1);
}

}  // namespace

TEST_CASE("docs/http.md's Python receiver verifies the signature and its answers settle checks") {
  answers_checks("python3", "python", "receiver.py");
}

TEST_CASE("docs/http.md's Node receiver verifies the signature and its answers settle checks") {
  answers_checks("node", "js", "receiver.js");
}
