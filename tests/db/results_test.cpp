// Results (docs/design.md, "Results"): what a run returns besides its answer, any JSON of at most 64 KiB as
// PostgreSQL prints it, kept in the history's row when the check ends and in its timeline row when it goes
// on; over the bound, that check's failed attempt, never its batch's. From a C++ class, a command and a
// worker here; from an http answer in tests/db/http_job_test.cpp.
#include <catch2/catch.hpp>
#include <soci/soci.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "builtin_jobs.hpp"
#include "prescient/check_records.hpp"
#include "prescient/checks.hpp"
#include "prescient/client.hpp"
#include "prescient/job_classes.hpp"
#include "prescient/slot_runner.hpp"
#include "prescient/time_text.hpp"
#include "runner/settlements.hpp"
#include "client_fixture.hpp"
#include "process.hpp"
#include "test_database.hpp"

using namespace prescient;
using namespace std::chrono_literals;
using prescient::testing::count_of;

namespace {

// About 1 KiB of JSON.
nlohmann::json kilobyte_result() {
  nlohmann::json out = {{"sent", 2}, {"to", nlohmann::json::array()}};
  for (int i = 0; i < 20; ++i) out["to"].push_back("recipient-" + std::to_string(i) + "@example.org");
  out["note"] = std::string(500, 'n');
  return out;
}

// Returns payload.result as its result (and payload.next as its answer, if any); payload.bytes: a result of
// that many bytes instead.
class Returning final : public JobExec {
 public:
  JobResult run(const Check& check, JobContext&) override {
    JobResult out;
    if (check.payload.contains("bytes")) {
      out.result = std::string(check.payload["bytes"].get<std::size_t>(), 'r');
    } else if (check.payload.contains("result")) {
      out.result = check.payload["result"];
    }
    if (check.payload.contains("next")) out.next = parse_time(check.payload["next"].get<std::string>());
    return out;
  }
};

// `answer` prints {"next": null, "result": <its first argument>}.
std::string answer_commands_dir() {
  return prescient::testing::commands_dir_with("answer", "#!/bin/sh\nprintf '{\"next\": null, \"result\": %s}\\n' \"$1\"\n");
}

struct ResultsFixture : prescient::testing::ClientFixture {
  ResultsFixture() : ClientFixture("2026-11-21T10:00:30Z", 60, {.commands_dir = answer_commands_dir()}) {
    registry.add("returning", [] { return std::make_unique<Returning>(); });
    declare_job_classes(*db, registry, "r", clock.now());
  }
  std::int64_t add(const std::string& job, nlohmann::json payload, const std::string& key = "1") {
    return client.schedule({.job = job, .entity_name = "o", .entity_key = key,
                            .at = parse_time("2026-11-21T10:01:00Z"), .payload = std::move(payload)}).id;
  }
  SlotReport fire() {
    clock.set(parse_time("2026-11-21T10:01:00Z"));
    SlotRunner runner({.database_url = url, .runner_id = "r", .batch_size = 100}, registry, clock);
    return runner.run_slot(parse_time("2026-11-21T10:01:00Z"));
  }
  nlohmann::json history_result(std::int64_t id) {
    std::string text;
    soci::indicator null;
    *db << "SELECT result::text FROM prescient.job_history WHERE id = :id", soci::use(id), soci::into(text, null);
    return null == soci::i_ok ? nlohmann::json::parse(text) : nlohmann::json();
  }
};

}  // namespace

TEST_CASE("results: a 1 KiB result round-trips from a C++ class, a command, an SQL function and a worker") {
  ResultsFixture f;
  const nlohmann::json result = kilobyte_result();
  REQUIRE(result.dump().size() > 1000);
  *f.db << "CREATE SCHEMA app";
  *f.db << "CREATE FUNCTION app.with_result(k text, p jsonb, n integer) RETURNS jsonb LANGUAGE sql"
           " AS $$ SELECT jsonb_build_object('next', NULL, 'result', p->'result') $$";
  *f.db << "CREATE FUNCTION app.bad_answer(k text, p jsonb, n integer) RETURNS jsonb LANGUAGE sql"
           " AS $$ SELECT '{\"nxt\": 1}'::jsonb $$";
  const std::int64_t by_sql = f.add("sql", {{"function", "app.with_result"}, {"result", result}}, "5");
  const std::int64_t bad_sql = f.add("sql", {{"function", "app.bad_answer"}}, "6");
  const std::int64_t by_class = f.add("returning", {{"result", result}});
  const std::int64_t later = f.add("returning", {{"result", result}, {"next", "2026-11-21T11:00:00Z"}}, "2");
  const std::int64_t by_command = f.add("command", {{"command", "answer"}, {"args", {result.dump()}}}, "3");
  f.fire();
  CHECK(f.history_result(by_class) == result);
  CHECK(f.history_result(by_command) == result);
  CHECK(f.history_result(by_sql) == result);
  CHECK_THAT(Checks(*f.db).pending({.id = bad_sql, .limit = 1}).at(0).last_error.value_or(""),
             Catch::Contains("app.bad_answer(text,jsonb,integer) returned an answer with the unknown key 'nxt'"));

  // A run that leaves its check pending keeps its result in the timeline; show prints both.
  const CheckTrace pending = Checks(*f.db).trace(later, std::nullopt);
  REQUIRE(pending.runs.size() == 1);
  CHECK(pending.runs[0].run_result == result);
  CHECK(to_json(pending)["runs"][0]["run_result"] == result);
  const CheckTrace ended = Checks(*f.db).trace(by_class, std::nullopt);
  REQUIRE(ended.history.size() == 1);
  CHECK(ended.history[0].result == result);
  CHECK(to_json(ended)["history"][0]["result"] == result);

  // A worker's, through the protocol.
  *f.db << "SELECT prescient.job_class_add('mailer', true)";
  *f.db << "UPDATE prescient.settings SET workers_may_pin_clock = true";  // the worker's calls below pin the clock
  const std::int64_t by_worker = f.add("mailer", nlohmann::json::object(), "4");
  long long token = 0;
  *f.db << "SELECT lease_token FROM prescient.worker_take('w', '{mailer}', 1, 30, '2026-11-21T10:02:00Z')",
      soci::into(token);
  REQUIRE(token != 0);
  const std::string text = result.dump();
  *f.db << "SELECT count(*) FROM prescient.worker_complete('w', ARRAY[:id]::bigint[], ARRAY[:t]::bigint[],"
           " ARRAY[NULL]::timestamptz[], ARRAY[:r::jsonb], '2026-11-21T10:02:01Z')",
      soci::use(by_worker), soci::use(token), soci::use(text);
  CHECK(f.history_result(by_worker) == result);
}

TEST_CASE("results: a 10 MiB result fails its check alone; the bound is PostgreSQL's measure of it") {
  ResultsFixture f;
  const std::int64_t huge = f.add("returning", {{"bytes", 10 << 20}});
  std::vector<std::int64_t> others;
  for (int i = 0; i < 5; ++i) others.push_back(f.add("returning", {{"result", {{"n", i}}}}, "o" + std::to_string(i)));
  const std::int64_t edge = f.add("returning", {{"bytes", runner::kMaxResultBytes - 2}}, "edge");  // with its quotes
  const std::int64_t over = f.add("returning", {{"bytes", runner::kMaxResultBytes - 1}}, "over");
  f.fire();
  for (std::size_t i = 0; i < others.size(); ++i) CHECK(f.history_result(others[i]) == nlohmann::json{{"n", i}});
  CHECK(f.history_result(edge).get<std::string>().size() == runner::kMaxResultBytes - 2);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.job_history WHERE result IS NOT NULL"
                        " AND octet_length(result::text) > 65536") == 0);

  const PendingCheck failed = Checks(*f.db).pending({.id = huge, .limit = 1}).at(0);
  CHECK(failed.attempts == 1);
  CHECK(failed.last_error == "its result is " + std::to_string((10 << 20) + 2) + " bytes of JSON (at most 65536)");
  CHECK(Checks(*f.db).pending({.id = over, .limit = 1}).at(0).last_error ==
        "its result is 65537 bytes of JSON (at most 65536)");
}

TEST_CASE("results: the runner measures a result as PostgreSQL prints it") {
  ResultsFixture f;
  for (const nlohmann::json& value :
       {nlohmann::json::parse(R"({"a": 1, "b": [1, 2, {"c": null}], "d": {}, "e": [], "f": "x\"y\n"})"),
        nlohmann::json::parse(R"([{"é": "ü"}, [[]], 1.5, -2, true, false, null])"),
        nlohmann::json("plain"), nlohmann::json(42), kilobyte_result()}) {
    const std::string text = value.dump();
    long long printed = 0;
    *f.db << "SELECT octet_length(:v::jsonb::text)", soci::use(text), soci::into(printed);
    INFO(text);
    CHECK(runner::jsonb_text_bytes(value) == static_cast<std::size_t>(printed));
  }
}
