#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include <catch2/catch.hpp>
#include <libpq-fe.h>
#include <nlohmann/json.hpp>
#include <soci/soci.h>

#include "db/connection.hpp"
#include "prescient/migrations.hpp"
#include "process.hpp"
#include "test_database.hpp"

using namespace prescient::testing;
using namespace prescient;

TEST_CASE("--version and --help") {
  const ProcessResult version = run_prescient({"--version"});
  CHECK(version.exit_code == 0);
  CHECK_THAT(version.out, Catch::StartsWith("prescient 0.1.0 (schema "));
  const ProcessResult help = run_prescient({"--help"});
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.out, Catch::Contains("migrate") && Catch::Contains("settings") && Catch::Contains("Exit codes"));
  const ProcessResult migrate_help = run_prescient({"migrate", "--help"});
  CHECK(migrate_help.exit_code == 0);
  CHECK_THAT(migrate_help.out, Catch::Contains("--slot") && Catch::Contains("--db") && Catch::Contains("--log-format"));
}

TEST_CASE("every command listed by --help has a --help of its own, with the same summary") {
  const ProcessResult help = run_prescient({"--help"});
  REQUIRE(help.exit_code == 0);
  const auto lines = lines_of(help.out);
  const auto commands_at = std::find(lines.begin(), lines.end(), "Commands:");
  REQUIRE(commands_at != lines.end());
  int commands = 0;
  for (auto line = commands_at + 1; line != lines.end() && !line->empty(); ++line, ++commands) {
    const std::string name = line->substr(2, line->find(' ', 2) - 2);
    const std::string summary = line->substr(line->find_first_not_of(' ', 2 + name.size()));
    INFO(name);
    // Commands with a required option (purge, retry) must show their help without it.
    const ProcessResult own = run_prescient({name, "--help"});
    CHECK(own.exit_code == 0);
    CHECK_THAT(own.out, Catch::StartsWith("Usage: prescient " + name) && Catch::Contains(summary) &&
                            Catch::Contains("--log-level"));
  }
  CHECK(commands >= 16);
}

namespace {

// What a shell command prints; fails the test when it fails.
std::string output_of(const std::string& command) {
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buffer[4096];
  while (const std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
  INFO(command);
  REQUIRE(::pclose(pipe) == 0);
  return out;
}

std::string source_file(const std::string& path) {
  std::ifstream file(std::string(PRESCIENT_SOURCE_DIR) + "/" + path);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("docs/cli.md is the binary's own help: regenerate it with scripts/cli-reference.sh") {
  const std::string generated =
      output_of(std::string(PRESCIENT_SOURCE_DIR) + "/scripts/cli-reference.sh " + PRESCIENT_BIN);
  CHECK(generated.size() > 5000);
  CHECK(source_file("docs/cli.md") == generated);
}

TEST_CASE("sql/schema.sql is the schema migrate makes: regenerate it with scripts/schema-dump.sh") {
  const char* url = std::getenv("PRESCIENT_TEST_DATABASE_URL");
  REQUIRE(url != nullptr);
  const std::string dumped = output_of(std::string(PRESCIENT_SOURCE_DIR) + "/scripts/schema-dump.sh '" + url + "' " +
                                       PRESCIENT_BIN);
  CHECK_THAT(dumped, Catch::Contains("CREATE TABLE prescient.future_job") &&
                         Catch::Contains("CREATE FUNCTION prescient.schedule_arrays"));
  const bool same = source_file("sql/schema.sql") == dumped;
  if (!same) {
    const std::string path = "/tmp/prescient-schema-" + std::to_string(::getpid()) + ".sql";
    std::ofstream(path) << dumped;
    FAIL("sql/schema.sql drifted from what migrate makes: diff it with " << path);
  }
}

// The schema without the binary (docs/workers.md, "The schema without the binary"): one SQL file that any
// client applies, generated from the same embedded files, with the same bookkeeping.
TEST_CASE("sql/prescient-bundle.sql is what migrate --print-bundle prints, and makes the schema migrate makes") {
  const char* url = std::getenv("PRESCIENT_TEST_DATABASE_URL");
  REQUIRE(url != nullptr);
  const ProcessResult printed = run_prescient({"migrate", "--print-bundle"});
  REQUIRE(printed.exit_code == 0);
  CHECK(source_file("sql/prescient-bundle.sql") == printed.out);
  // Migrated by the committed bundle, the schema is sql/schema.sql to the letter, as the binary makes it.
  const std::string dumped = output_of(std::string(PRESCIENT_SOURCE_DIR) + "/scripts/schema-dump.sh --bundle '" +
                                       PRESCIENT_SOURCE_DIR + "/sql/prescient-bundle.sql' '" + url + "'");
  CHECK(source_file("sql/schema.sql") == dumped);
}

TEST_CASE("the bundle and the binary upgrade after each other; a newer database refuses an older bundle") {
  const std::string bundle = run_prescient({"migrate", "--print-bundle"}).out;
  REQUIRE(!bundle.empty());
  // Applies the bundle in one transaction; answers how many files it applied, or the refusal's SQLSTATE and text.
  const auto apply = [&](const std::string& url, const std::string& slot) {
    auto db = connect_to(url);
    PGconn* conn = db::native_connection(*db);
    PGresult* loaded = PQexec(conn, ("BEGIN;" + bundle).c_str());
    REQUIRE(PQresultStatus(loaded) == PGRES_COMMAND_OK);
    PQclear(loaded);
    PGresult* run = PQexec(conn, ("SELECT count(*) FROM pg_temp.prescient_migrate(" + slot + ")").c_str());
    std::pair<std::string, std::string> outcome;
    if (PQresultStatus(run) == PGRES_TUPLES_OK) {
      outcome = {"", PQgetvalue(run, 0, 0)};
      PQclear(PQexec(conn, "COMMIT"));
    } else {
      outcome = {PQresultErrorField(run, PG_DIAG_SQLSTATE), PQresultErrorField(run, PG_DIAG_MESSAGE_PRIMARY)};
      PQclear(PQexec(conn, "ROLLBACK"));
    }
    PQclear(run);
    return outcome;
  };
  // Made by the bundle: the binary finds it up to date, and the bundle again applies nothing.
  const std::string by_bundle = create_empty_database();
  CHECK(apply(by_bundle, "60").first.empty());
  const ProcessResult binary = run_prescient({"migrate", "--db", by_bundle});
  CHECK(binary.exit_code == 0);
  CHECK_THAT(binary.out, Catch::Contains("up to date: schema version"));
  CHECK(apply(by_bundle, "NULL") == std::pair<std::string, std::string>{"", "0"});
  // Made by the binary: the bundle applies nothing, and refuses another slot as the binary does.
  const std::string by_binary = create_migrated_database(60);
  CHECK(apply(by_binary, "NULL") == std::pair<std::string, std::string>{"", "0"});
  CHECK(apply(by_binary, "30").first == "PR400");
  // A database one migration newer than the bundle: refused before anything is written.
  auto db = connect_to(by_binary);
  *db << "INSERT INTO prescient.schema_migrations (version, name, checksum) VALUES (9999, '9999_future.sql', 'x')";
  const auto [state, message] = apply(by_binary, "NULL");
  CHECK(state == "PR400");
  CHECK_THAT(message, Catch::StartsWith("the database has migration 9999_future.sql, newer than this bundle knows"));
  // A changed function file the bundle knows is put back; the record says so.
  *db << "DELETE FROM prescient.schema_migrations WHERE version = 9999";
  *db << "UPDATE prescient.schema_functions SET checksum = 'edited' WHERE name = '072_worker_protocol.sql'";
  CHECK(apply(by_binary, "NULL") == std::pair<std::string, std::string>{"", "1"});
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.schema_functions WHERE checksum = 'edited'") == 0);
}

TEST_CASE("a password in --db draws a warning and is never printed") {
  const ProcessResult r = run_prescient({"settings", "--db", "postgresql://u:s3cr3t-pw@127.0.0.1:1/x?connect_timeout=2"});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("holds a password") && Catch::Contains("PGPASSWORD"));
  CHECK_THAT(r.err + r.out, !Catch::Contains("s3cr3t-pw"));
  const ProcessResult quiet = run_prescient({"settings", "--db", "postgresql://u@127.0.0.1:1/x?connect_timeout=2"});
  CHECK_THAT(quiet.err, !Catch::Contains("password"));
}

TEST_CASE("usage errors exit 2 with one line naming the problem") {
  struct Case {
    std::vector<std::string> args;
    const char* names;
  };
  const Case cases[] = {
      {{}, "Usage"},
      {{"frobnicate"}, "'frobnicate'"},
      {{"--frobnicate"}, "'--frobnicate'"},
      {{"migrate", "--frobnicate"}, "--frobnicate"},
      {{"migrate", "extra"}, "extra"},
      {{"migrate", "--slot"}, "--slot"},
      {{"migrate", "--slot", "7m", "--db", "host=127.0.0.1 port=1"}, "7m"},
      {{"migrate", "--slot", "-1m", "--db", "host=127.0.0.1 port=1"}, "-1m"},
      {{"settings", "--log-format", "xml"}, "xml"},
      {{"settings", "--db", "postgresql://u:secret@[::1"}, "invalid database URL"},
  };
  for (const Case& c : cases) {
    INFO(Catch::rangeToString(c.args));
    const ProcessResult r = run_prescient(c.args, no_database_env());
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains(c.names));
    if (!c.args.empty()) CHECK(lines_of(r.err).size() == 1);
    CHECK_THAT(r.err, !Catch::Contains("secret"));
  }
}

TEST_CASE("an unreachable database is one line naming host and port, exit 1") {
  const ProcessResult r = run_prescient({"settings", "--db", "postgresql://nobody@127.0.0.1:1/x"}, no_database_env());
  CHECK(r.exit_code == 1);
  CHECK(lines_of(r.err).size() == 1);
  CHECK_THAT(r.err, Catch::Contains("127.0.0.1") && Catch::Contains("port 1") && Catch::Contains("refused"));
}

TEST_CASE("migrate from the command line, then settings, via --db and via PRESCIENT_DATABASE_URL") {
  const std::string url = create_empty_database();
  const ProcessResult unmigrated = run_prescient({"settings", "--db", url});
  CHECK(unmigrated.exit_code == 1);
  CHECK_THAT(unmigrated.err, Catch::Contains("prescient migrate"));

  const ProcessResult first = run_prescient({"migrate", "--slot", "15m", "--db", url});
  CHECK(first.exit_code == 0);
  CHECK_THAT(first.out, Catch::Contains("applied 0001_init.sql") && Catch::Contains("slot 15m"));

  const ProcessResult second = run_prescient({"migrate", "--json"}, {{"PRESCIENT_DATABASE_URL", url}});
  CHECK(second.exit_code == 0);
  const auto report = nlohmann::json::parse(second.out);
  CHECK(report["applied"].empty());
  CHECK(report["slot"] == "15m");
  CHECK(report["version"] == prescient::latest_known_migration());

  const ProcessResult mismatch = run_prescient({"migrate", "--slot", "1m", "--db", url});
  CHECK(mismatch.exit_code == 2);
  CHECK_THAT(mismatch.err, Catch::Contains("15m"));

  const ProcessResult settings = run_prescient({"settings", "--json", "--db", url});
  CHECK(settings.exit_code == 0);
  const auto s = nlohmann::json::parse(settings.out);
  CHECK(s["slot_seconds"] == 900);
  CHECK(s["max_horizon"] == "365d");
  // No retention unless the owner sets one: nothing is removed after an upgrade that was kept before.
  CHECK(s["history_retention_seconds"].is_null());
  CHECK(s["dead_letter_retention_seconds"].is_null());
  CHECK(s["event_retention_seconds"].is_null());
}

TEST_CASE("migrate names each file it applied once, on stdout, and nothing when up to date") {
  const std::string url = create_empty_database();
  const ProcessResult first = run_prescient({"migrate", "--db", url});
  REQUIRE(first.exit_code == 0);
  // What a terminal shows: stdout and the log on stderr. A line names a file when it ends with " NAME".
  const auto lines = lines_of(first.out + first.err);
  const auto naming = [&](std::string_view name) {
    return std::count_if(lines.begin(), lines.end(), [&](const std::string& line) {
      return line.size() > name.size() && line.ends_with(name) && line[line.size() - name.size() - 1] == ' ';
    });
  };
  const auto migrations = prescient::embedded_migrations();
  const auto functions = prescient::embedded_functions();
  for (const auto& m : migrations) CHECK(naming(m.name) == 1);
  for (const auto& f : functions) CHECK(naming(f.name) == 1);
  const auto out = lines_of(first.out);
  REQUIRE(out.size() == migrations.size() + functions.size() + 1);
  CHECK(out.front() == "applied " + std::string(migrations.front().name));
  CHECK(out[migrations.size()] == "applied functions " + std::string(functions.front().name));
  CHECK(out.back() == "migrated: schema version " + std::to_string(prescient::latest_known_migration()) + ", slot 1m");

  const ProcessResult again = run_prescient({"migrate", "--db", url});
  CHECK(again.exit_code == 0);
  CHECK(again.out == "up to date: schema version " + std::to_string(prescient::latest_known_migration()) + ", slot 1m\n");
  CHECK(again.err.empty());
}

TEST_CASE("--log-format json writes one JSON object per log line") {
  const std::string url = create_empty_database();
  const ProcessResult r = run_prescient({"migrate", "--db", url, "--log-format", "json", "--log-level", "debug"});
  REQUIRE(r.exit_code == 0);
  // At debug: a line a migration, a line a function file (with the server's notices between them), and
  // one at info for the history partitions it made, last.
  std::vector<std::string> applied;
  const auto lines = lines_of(r.err);
  REQUIRE(!lines.empty());
  for (const std::string& line : lines) {
    const auto entry = nlohmann::json::parse(line);
    const std::string msg = entry["msg"].get<std::string>();
    if (msg.starts_with("applied ")) {
      CHECK(entry["level"] == "debug");
      applied.push_back(msg);
    }
    CHECK_THAT(entry["time"].get<std::string>(), Catch::EndsWith("Z"));
  }
  std::vector<std::string> expected;
  for (const auto& m : prescient::embedded_migrations()) expected.push_back("applied migration " + std::string(m.name));
  for (const auto& f : prescient::embedded_functions()) expected.push_back("applied functions " + std::string(f.name));
  CHECK(applied == expected);
  const auto last = nlohmann::json::parse(lines.back());
  CHECK(last["level"] == "info");
  CHECK_THAT(last["msg"].get<std::string>(), Catch::Contains("history partition"));
}
