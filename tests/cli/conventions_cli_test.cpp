// The CLI habits of the ecosystem: global options before or after the command, an environment variable
// for each, `help <command>`, and the generated bash completion and man page.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "process.hpp"
#include "test_database.hpp"

using namespace prescient::testing;

namespace {

std::string migrated_with_checks(int count) {
  const std::string url = create_migrated_database(60);
  for (int i = 0; i < count; ++i) {
    REQUIRE(run_prescient({"schedule", "--db", url, "--job", "noop", "--entity-name", "order", "--entity-key",
                           std::to_string(i), "--in", "1h"})
                .exit_code == 0);
  }
  return url;
}

// What bash completes for the words typed so far (the last one being completed), with the script
// `prescient help --completion` wrote.
std::string complete(const std::string& script, const std::string& typed) {
  const std::string command = "bash -c 'source " + script + "; COMP_WORDS=(" + typed + "); COMP_CWORD=$((${#COMP_WORDS[@]} - 1));"
                              " _prescient; echo \"${COMPREPLY[*]}\"'";
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  while (const std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
  REQUIRE(::pclose(pipe) == 0);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

TEST_CASE("global options before or after the command give the same output") {
  const std::string url = migrated_with_checks(3);
  const ProcessResult after = run_prescient({"list", "--db", url}, no_database_env());
  REQUIRE(after.exit_code == 0);
  CHECK(lines_of(after.out).size() == 4);  // a header and 3 checks
  const ProcessResult before = run_prescient({"--db", url, "list"}, no_database_env());
  CHECK(before.exit_code == 0);
  CHECK(before.out == after.out);
  const ProcessResult joined = run_prescient({"--db=" + url, "--log-level", "warn", "--json", "list"}, no_database_env());
  CHECK(joined.exit_code == 0);
  CHECK_THAT(joined.out, Catch::StartsWith("["));
  CHECK(run_prescient({"--db", url, "--json", "list", "--limit", "1"}, no_database_env()).exit_code == 0);

  const ProcessResult unknown = run_prescient({"--bogus", "list"});
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.err == "prescient: unknown option '--bogus' before the command (see prescient --help)\n");
  const ProcessResult missing = run_prescient({"--db"});
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.err, Catch::Contains("'--db' requires a value"));
}

TEST_CASE("every global option has an environment variable; the flag wins") {
  const std::string url = migrated_with_checks(2);
  const ProcessResult json = run_prescient({"list"}, {{"PRESCIENT_DATABASE_URL", url}, {"PRESCIENT_JSON", "1"}});
  CHECK(json.exit_code == 0);
  CHECK(nlohmann::json::parse(json.out).size() == 2);
  const ProcessResult bad_json = run_prescient({"list"}, {{"PRESCIENT_DATABASE_URL", url}, {"PRESCIENT_JSON", "maybe"}});
  CHECK(bad_json.exit_code == 2);
  CHECK_THAT(bad_json.err, Catch::Contains("invalid PRESCIENT_JSON 'maybe'"));

  // A password in --db draws a warning: a log line to look at.
  const std::string with_password = url + " password=unused";
  const ProcessResult json_log = run_prescient({"list", "--db", with_password}, {{"PRESCIENT_LOG_FORMAT", "json"}});
  CHECK(json_log.exit_code == 0);
  CHECK_THAT(json_log.err, Catch::StartsWith("{"));
  const ProcessResult text_log = run_prescient({"list", "--db", with_password, "--log-format", "text"},
                                               {{"PRESCIENT_LOG_FORMAT", "json"}});
  CHECK_THAT(text_log.err, Catch::Contains("password"));
  CHECK_FALSE(text_log.err.starts_with("{"));
  const ProcessResult bad_level = run_prescient({"list", "--db", url}, {{"PRESCIENT_LOG_LEVEL", "loud"}});
  CHECK(bad_level.exit_code == 2);
  CHECK_THAT(bad_level.err, Catch::Contains("loud"));
  const ProcessResult quiet = run_prescient({"list", "--db", with_password}, {{"PRESCIENT_LOG_LEVEL", "off"}});
  CHECK(quiet.exit_code == 0);
  CHECK(quiet.err.empty());
}

TEST_CASE("prescient help <command> is <command> --help") {
  for (const char* command : {"list", "daemon", "schedule", "web"}) {
    const ProcessResult help = run_prescient({"help", command});
    CHECK(help.exit_code == 0);
    CHECK(help.out == run_prescient({command, "--help"}).out);
  }
  CHECK(run_prescient({"help"}).out == run_prescient({"--help"}).out);
  const ProcessResult unknown = run_prescient({"help", "frobnicate"});
  CHECK(unknown.exit_code == 2);
  CHECK_THAT(unknown.err, Catch::Contains("no command 'frobnicate'"));
}

TEST_CASE("the bash completion and the man page come from the option tables") {
  const std::filesystem::path script = std::filesystem::temp_directory_path() /
                                       ("prescient-completion-" + std::to_string(::getpid()) + ".bash");
  const ProcessResult completion = run_prescient({"help", "--completion"});
  REQUIRE(completion.exit_code == 0);
  std::ofstream(script) << completion.out;
  CHECK(complete(script, "prescient li") == "list limits");
  CHECK(complete(script, "prescient lis") == "list");
  CHECK(complete(script, "prescient list --entity-") == "--entity-name --entity-key");
  CHECK(complete(script, "prescient --db x daemon --max-clock") == "--max-clock-offset");
  CHECK(complete(script, "prescient help run") == "run-slot");
  std::filesystem::remove(script);

  const ProcessResult man = run_prescient({"help", "--man"});
  REQUIRE(man.exit_code == 0);
  CHECK_THAT(man.out, Catch::StartsWith(".TH PRESCIENT 1"));
  for (const char* text : {".SS \"daemon\"", "\\-\\-max\\-clock\\-offset", "PRESCIENT_LOG_LEVEL", ".SH EXIT STATUS"}) {
    CHECK_THAT(man.out, Catch::Contains(text));
  }
}

TEST_CASE("reading commands read from --read-db or PRESCIENT_READ_DATABASE_URL") {
  const std::string primary = migrated_with_checks(1);
  const std::string replica = migrated_with_checks(3);  // stands in for a replica: other rows tell them apart
  CHECK(lines_of(run_prescient({"list", "--db", primary}).out).size() == 2);
  CHECK(lines_of(run_prescient({"list", "--db", primary, "--read-db", replica}).out).size() == 4);
  CHECK(lines_of(run_prescient({"list", "--db", primary}, {{"PRESCIENT_READ_DATABASE_URL", replica}}).out).size() == 4);
  CHECK(run_prescient({"history", "--db", primary, "--read-db", replica}).exit_code == 0);
  CHECK(run_prescient({"show", "--db", primary, "--read-db", replica, "--id", "3"}).exit_code == 0);
  CHECK(run_prescient({"show", "--db", primary, "--id", "3"}).exit_code == 3);
  CHECK(run_prescient({"stats", "--db", primary, "--read-db", replica}).exit_code == 0);
  const ProcessResult daemon = run_prescient({"daemon", "--db", primary, "--read-db", replica});
  CHECK(daemon.exit_code == 2);
  CHECK_THAT(daemon.err, Catch::Contains("give it with --web-addr"));
  const ProcessResult fresh = run_prescient({"stats", "--db", primary, "--read-db", replica, "--fresh"});
  CHECK(fresh.exit_code == 2);
  CHECK_THAT(fresh.err, Catch::Contains("--fresh counts on the primary"));
}
