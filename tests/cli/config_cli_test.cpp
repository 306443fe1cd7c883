// The configuration file: precedence (flag > variable > file > default), sections per command, bad files
// refused naming the file, the line and the value, secrets kept out of files every user may read, and a
// running daemon reloading on SIGHUP.
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "process.hpp"
#include "test_database.hpp"

using namespace prescient::testing;
using namespace std::chrono_literals;

namespace {

// A file of the test's own, with this text and mode, removed when it goes.
class TempFile {
 public:
  TempFile(const std::string& text, mode_t mode = 0600) {
    static int count = 0;
    path_ = (std::filesystem::temp_directory_path() /
             ("prescient-config-" + std::to_string(::getpid()) + "-" + std::to_string(++count) + ".conf"))
                .string();
    std::ofstream(path_) << text;
    ::chmod(path_.c_str(), mode);
  }
  ~TempFile() { std::filesystem::remove(path_); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The variables a test sets, every other one of prescient's unset, so the machine's cannot leak in.
std::map<std::string, std::string> only(std::map<std::string, std::string> env) {
  for (const char* name : {"PRESCIENT_DATABASE_URL", "PRESCIENT_LOG_LEVEL", "PRESCIENT_LOG_FORMAT", "PRESCIENT_CONFIG",
                           "PRESCIENT_DATABASE_PASSWORD_FILE", "PRESCIENT_JSON", "PRESCIENT_READ_DATABASE_URL",
                           "PRESCIENT_PLUGIN_PATH", "PRESCIENT_HTTP_TARGETS", "PRESCIENT_PREPARED_STATEMENTS"}) {
    env.try_emplace(name, "");
  }
  return env;
}

struct Shown {
  std::string value, from;
  bool operator==(const Shown&) const = default;
};

// What `prescient config COMMAND ...` says of one option ({"-", "-"} when it shows none).
Shown shown(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
            const std::string& option) {
  std::vector<std::string> words{"config"};
  words.insert(words.end(), args.begin(), args.end());
  words.push_back("--json");
  const ProcessResult r = run_prescient(words, only(env));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json out = nlohmann::json::parse(r.out);
  for (const auto& o : out["options"]) {
    if (o["option"] == option) return {o["value"].get<std::string>(), o["from"].get<std::string>()};
  }
  return {"-", "-"};
}

}  // namespace

namespace Catch {
template <>
struct StringMaker<Shown> {
  static std::string convert(const Shown& s) { return "{" + s.value + ", " + s.from + "}"; }
};
}  // namespace Catch

TEST_CASE("an option's value: the flag, else its variable, else the command's section, else before any section, "
          "else the default") {
  const TempFile top("workers = 3\nlog-level = debug\n");
  const TempFile both("workers = 3\nlog-level = debug\n[daemon]\nworkers = 4\n[run-slot]\nworkers = 5\n");
  const std::string top_file = top.path(), both_file = both.path();
  struct Row {
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
    const char* option;
    Shown expected;
  };
  const std::vector<Row> rows{
      {{"daemon"}, {}, "workers", {"2", "default"}},
      {{"daemon", "--config", top_file}, {}, "workers", {"3", top_file + ":1"}},
      {{"daemon", "--config", both_file}, {}, "workers", {"4", both_file + ":4"}},
      {{"run-slot", "--config", both_file}, {}, "workers", {"5", both_file + ":6"}},
      {{"sweep", "--config", both_file}, {}, "workers", {"3", both_file + ":1"}},
      {{"daemon", "--config", both_file, "--workers", "6"}, {}, "workers", {"6", "flag"}},
      {{"daemon"}, {{"PRESCIENT_CONFIG", both_file}}, "workers", {"4", both_file + ":4"}},
      // The global option with a variable, at every level of precedence.
      {{"list"}, {}, "log-level", {"info", "default"}},
      {{"list", "--config", top_file}, {}, "log-level", {"debug", top_file + ":2"}},
      {{"list", "--config", top_file}, {{"PRESCIENT_LOG_LEVEL", "warn"}}, "log-level", {"warn", "PRESCIENT_LOG_LEVEL"}},
      {{"--log-level", "error", "list", "--config", top_file}, {{"PRESCIENT_LOG_LEVEL", "warn"}}, "log-level",
       {"error", "flag"}},
      // A variable given as a flag's --config is read; /dev/null reads nothing.
      {{"list", "--config", "/dev/null"}, {{"PRESCIENT_CONFIG", top_file}}, "log-level", {"info", "default"}},
  };
  for (const Row& row : rows) {
    INFO(Catch::rangeToString(row.args) << " " << row.option);
    CHECK(shown(row.args, row.env, row.option) == row.expected);
  }
}

TEST_CASE("a switch in a variable or the file is yes or no, and the earlier source decides even a no") {
  const TempFile yes("json = yes\n[daemon]\nweb-read-only = true\n");
  CHECK(shown({"list", "--config", yes.path()}, {}, "json") == Shown{"yes", yes.path() + ":1"});
  CHECK(shown({"daemon", "--config", yes.path()}, {}, "web-read-only") == Shown{"yes", yes.path() + ":3"});
  CHECK(shown({"list", "--config", yes.path()}, {{"PRESCIENT_JSON", "no"}}, "json") == Shown{"-", "-"});
  // A list takes every line that gives it, in the order written.
  const TempFile weights("[limits]\nweight = acme=3\nweight = globex=2\n");
  CHECK(shown({"limits", "--config", weights.path()}, {}, "weight") ==
        Shown{"acme=3, globex=2", weights.path() + ":2"});
  CHECK(shown({"limits", "--config", weights.path(), "--weight", "a=1"}, {}, "weight") == Shown{"a=1", "flag"});
}

TEST_CASE("commands run with what the file says: the database, JSON output, the log format") {
  const std::string url = create_migrated_database(60);
  REQUIRE(run_prescient({"schedule", "--db", url, "--job", "noop", "--entity-name", "o", "--entity-key", "1", "--in",
                         "1h"})
              .exit_code == 0);
  const TempFile file("db = " + url + "\nlog-format = json\n[list]\njson = yes\n");
  const ProcessResult list = run_prescient({"list", "--config", file.path()}, only({}));
  INFO(list.err);
  REQUIRE(list.exit_code == 0);
  CHECK(nlohmann::json::parse(list.out).size() == 1);
  const ProcessResult history = run_prescient({"history", "--config", file.path()}, only({}));
  CHECK(history.exit_code == 0);
  CHECK_THAT(history.out, Catch::StartsWith("FINISHED_AT"));  // json = yes was for list alone
  // A log line, to see its format: --db with a password draws a warning.
  const ProcessResult warned = run_prescient({"list", "--config", file.path(), "--db", url + " password=x"}, only({}));
  CHECK(warned.exit_code == 0);
  CHECK_THAT(warned.err, Catch::StartsWith("{"));
}

TEST_CASE("a bad config file: exit 2 and one line naming the file, the line and the value; nothing runs") {
  const std::string url = create_migrated_database(60);
  struct Row {
    std::string text;
    std::vector<std::string> args;
    std::string says;  // after "PATH:"
  };
  const std::vector<Row> rows{
      {"[daemon]\nworkers = 2\nfrobnicate = 1\n", {"daemon"}, "3: unknown option 'frobnicate' for daemon"},
      {"frobnicate = 1\n", {"list"}, "1: unknown option 'frobnicate': no command takes it"},
      {"# ok\n[deamon]\nworkers = 2\n", {"list"}, "2: [deamon]: no command 'deamon'"},
      {"[daemon]\n\nworkers = many\n", {"daemon"}, "3: workers = many: "},
      {"[daemon]\nbatch = 0\n", {"daemon"}, "2: batch = 0: invalid --batch 0: use 1 to 100000"},
      {"[daemon]\nbatch-deadline = soon\n", {"daemon"}, "2: batch-deadline = soon: invalid duration 'soon'"},
      {"[daemon]\nshard = 3/2\n", {"daemon"}, "2: shard = 3/2: "},
      {"[daemon]\nweb-addr = 0.0.0.0:8080\n", {"daemon"}, "2: web-addr = 0.0.0.0:8080: refusing to serve"},
      {"[daemon]\nworkers = 2\nworkers = 3\n", {"daemon"}, "3: workers = 3: "},
      {"log-level = loud\n", {"list"}, "1: log-level = loud: invalid --log-level 'loud'"},
      {"[list]\njson = maybe\n", {"list"}, "2: json = maybe: a switch is set with yes or no"},
      {"[web]\nhash-secret = admin\n", {"web"}, "2: 'hash-secret' is given on the command line only"},
      {"workers 2\n", {"list"}, "1: 'workers 2' is neither `name = value` nor `[command]`"},
      // The whole file is checked, whatever the command: a mistake in [web] stops the daemon too.
      {"[web]\nadr = 127.0.0.1:9000\n", {"daemon"}, "2: unknown option 'adr' for web"},
  };
  for (const Row& row : rows) {
    const TempFile file(row.text);
    std::vector<std::string> args = row.args;
    args.insert(args.end(), {"--config", file.path(), "--db", url});
    INFO(row.text);
    const ProcessResult r = run_prescient(args, only({}));
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::StartsWith("prescient: " + file.path() + ":" + row.says));
    CHECK(lines_of(r.err).size() == 1);
  }
  for (const std::string& path : {std::string("/nonexistent/prescient.conf"), std::filesystem::temp_directory_path().string()}) {
    const ProcessResult r = run_prescient({"list", "--config", path, "--db", url}, only({}));
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::StartsWith("prescient: cannot read config file '" + path + "'") ||
                          Catch::StartsWith("prescient: config file '" + path + "' is a directory"));
  }
  const ProcessResult empty = run_prescient({"list", "--config", "", "--db", url}, only({}));
  CHECK(empty.exit_code == 2);
  CHECK_THAT(empty.err, Catch::Contains("--config is empty"));
}

TEST_CASE("a config file that its reader may not read is refused, naming it") {
  if (::getuid() != 0) return;  // Only root can become another user here; CI runs as root.
  const TempFile file("log-level = info\n", 0600);
  const std::string command = "runuser -u nobody -- " PRESCIENT_BIN " config list --config " + file.path() + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buffer[512];
  while (const std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
  const int status = ::pclose(pipe);
  CHECK(WEXITSTATUS(status) == 2);
  CHECK(out == "prescient: cannot read config file '" + file.path() + "': Permission denied\n");
}

TEST_CASE("secrets: never in a file every user may read; the password from a file of its own") {
  const std::string url = create_migrated_database(60);
  const TempFile open_url("db = postgresql://app:hunter2@127.0.0.1/app\n", 0644);
  const ProcessResult refused = run_prescient({"config", "list", "--config", open_url.path()}, only({}));
  CHECK(refused.exit_code == 2);
  CHECK(refused.err == "prescient: " + open_url.path() + ":1: db holds a password, and '" + open_url.path() +
                           "' may be read by every user (mode 0644): chmod o-r '" + open_url.path() +
                           "', or give the password in db-password-file\n");
  CHECK(refused.err.find("hunter2") == std::string::npos);
  const TempFile closed_url("db = postgresql://app:hunter2@127.0.0.1/app\n", 0640);
  const ProcessResult shown_closed = run_prescient({"config", "list", "--config", closed_url.path()}, only({}));
  CHECK(shown_closed.exit_code == 0);
  CHECK(shown_closed.out.find("hunter2") == std::string::npos);

  const TempFile open_password("hunter2\n", 0644);
  const TempFile password("hunter2\n", 0640);
  const TempFile file("db = " + url + "\ndb-password-file = " + open_password.path() + "\n");
  const ProcessResult open = run_prescient({"list", "--config", file.path()}, only({}));
  CHECK(open.exit_code == 2);
  CHECK(open.err == "prescient: " + file.path() + ":2: db-password-file = " + open_password.path() + ": '" +
                        open_password.path() + "' holds a secret but may be read by every user (mode 0644): chmod o-r '" +
                        open_password.path() + "'\n");
  // The password goes with the connection (the test cluster trusts, so it is accepted whatever it is).
  const ProcessResult listed = run_prescient({"list", "--db", url, "--db-password-file", password.path()}, only({}));
  CHECK(listed.exit_code == 0);
  const ProcessResult twice =
      run_prescient({"list", "--db", url + " password=other", "--db-password-file", password.path()}, only({}));
  CHECK(twice.exit_code == 2);
  CHECK_THAT(twice.err, Catch::Contains("holds a password, and a password file is given too"));
  CHECK(twice.err.find("hunter2") == std::string::npos);
  const ProcessResult from_variable =
      run_prescient({"list", "--db", url}, only({{"PRESCIENT_DATABASE_PASSWORD_FILE", "/nonexistent/password"}}));
  CHECK(from_variable.exit_code == 2);
  CHECK_THAT(from_variable.err,
             Catch::StartsWith("prescient: PRESCIENT_DATABASE_PASSWORD_FILE=/nonexistent/password: '/nonexistent/password' "
                               "is not a readable file"));
}

TEST_CASE("SIGHUP: the daemon reads its options again; the log level applies at once, other changes wait for a "
          "restart, a broken file changes nothing") {
  const std::string url = create_migrated_database(1);
  const TempFile file("log-level = info\n[daemon]\nworkers = 1\n");
  const std::string log = std::filesystem::temp_directory_path() / ("prescient-reload-" + std::to_string(::getpid()));
  const pid_t daemon = start_prescient({"daemon", "--db", url, "--config", file.path()}, "/dev/null", log);
  const auto wait_for_text = [&](const std::string& text) {
    for (int i = 0; i < 200; ++i) {
      std::ifstream in(log);
      const std::string said{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
      if (said.find(text) != std::string::npos) return said;
      std::this_thread::sleep_for(50ms);
    }
    FAIL("no '" << text << "' in the daemon's log");
    return std::string();
  };
  wait_for_text("started");
  std::ofstream(file.path()) << "log-level = debug\n[daemon]\nworkers = 2\n";
  ::kill(daemon, SIGHUP);
  wait_for_text("reloaded on SIGHUP: log level debug (from " + file.path() + ":1)");
  const std::string said = wait_for_text("changed, and applied only at a restart: workers");
  std::ofstream(file.path()) << "log-level = loud\n";
  ::kill(daemon, SIGHUP);
  wait_for_text("reload on SIGHUP refused, nothing changed: " + file.path() + ":1: log-level = loud");
  ::kill(daemon, SIGTERM);
  CHECK(wait_for(daemon) == 0);  // SIGHUP did not end it; SIGTERM did, cleanly
  std::filesystem::remove(log);
}
