#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <soci/soci.h>

#include <fstream>
#include <thread>

#include "process.hpp"
#include "test_database.hpp"

using namespace prescient::testing;
using nlohmann::json;

namespace {

long long pending_count(const std::string& url) {
  return count_of(*connect_to(url), "SELECT count(*) FROM prescient.future_job");
}

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = "/tmp/prescient-cli-test-" + std::to_string(::getpid()) + "-" + name;
  std::ofstream(path) << text;
  return path;
}

const std::vector<std::string> kOrder{"schedule", "--job", "noop", "--entity-name", "orders", "--entity-key", "42"};

std::vector<std::string> order_with(std::vector<std::string> extra) {
  std::vector<std::string> args = kOrder;
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

}  // namespace

TEST_CASE("schedule prints the id, key and next_check_at; --json prints one object") {
  const std::string url = create_migrated_database(900);
  const ProcessResult text = run_prescient(with_db(order_with({"--in", "3h", "--job-key", "k1"}), url));
  CHECK(text.exit_code == 0);
  CHECK_THAT(text.out, Catch::StartsWith("created id=") && Catch::Contains("key=k1") && Catch::Contains("next_check_at="));
  const ProcessResult as_json = run_prescient(with_db(order_with({"--in", "1h", "--job-key", "k2", "--json"}), url));
  REQUIRE(as_json.exit_code == 0);
  const json j = json::parse(as_json.out);
  CHECK(j["job_key"] == "k2");
  CHECK(j["status"] == "created");
  const std::string next = j["next_check_at"];
  CHECK((next.ends_with(":00:00Z") || next.ends_with(":15:00Z") || next.ends_with(":30:00Z") ||
         next.ends_with(":45:00Z")));  // on the 15-minute grid
  CHECK(j["next_check_at"] == j["first_check_at"]);

  // A debounce moves the check on, within its ceiling; a dedupe after it settled schedules nothing.
  const auto debounce = [&](const char* in) {
    return run_prescient(with_db(order_with({"--in", in, "--job-key", "d1", "--on-conflict", "debounce",
                                             "--max-wait", "2h", "--json"}), url));
  };
  const json first = json::parse(debounce("30m").out);
  const json moved = json::parse(debounce("5h").out);
  CHECK(moved["status"] == "debounced");
  CHECK(moved["id"] == first["id"]);
  CHECK(moved["next_check_at"] != first["next_check_at"]);
  // A digest gathers the payloads of its key's enqueues into one check's list.
  const auto collect = [&](const char* payload) {
    return json::parse(run_prescient(with_db(order_with({"--in", "30m", "--job-key", "digest:1", "--on-conflict",
                                                         "collect", "--max-wait", "2h", "--payload", payload,
                                                         "--json"}), url)).out);
  };
  const json started = collect(R"({"n": 1})");
  const json joined = collect(R"({"n": 2})");
  CHECK(started["status"] == "created");
  CHECK(joined["status"] == "collected");
  CHECK(joined["id"] == started["id"]);
  CHECK(count_of(*connect_to(url), "SELECT count(*) FROM prescient.future_job WHERE collects"
                                   " AND payload = '{\"collected\": [{\"n\": 1}, {\"n\": 2}]}'") == 1);
  *connect_to(url) << "DELETE FROM prescient.future_job WHERE job_key = 'd1'";  // as if settled:
  *connect_to(url) << "INSERT INTO prescient.job_history (id, job, entity_name, entity_key, job_key, payload,"
                      " first_check_at, last_check_at, check_count, attempts, enqueued_on, enqueued_by, finished_at,"
                      " finished_by, outcome) VALUES (77, 'noop', 'orders', '1', 'd1', '{}', now(), now(), 1, 0,"
                      " now(), 'test', now(), 'r', 'done')";
  const ProcessResult deduped =
      run_prescient(with_db(order_with({"--in", "1h", "--job-key", "d1", "--dedupe-for", "1d"}), url));
  CHECK(deduped.exit_code == 0);
  CHECK(deduped.out == "deduplicated: check 77 with job_key=d1 settled within the dedupe window; nothing scheduled\n");
}

TEST_CASE("bad input exits 2 with one line and writes nothing") {
  const std::string url = create_migrated_database();
  check_refused({
      {order_with({"--in", "1h", "--job", "nope"}), "cannot be specified more than once"},
      {{"schedule", "--job", "order_unshiped", "--entity-name", "orders", "--entity-key", "1", "--in", "1h"},
       "unknown job class 'order_unshiped' (known: "},
      {order_with({"--in", "1h", "--payload", "{not json"}), "{not json"},
      {order_with({"--in", "1h", "--payload", "[1,2]"}), "JSON object"},
      {order_with({"--at", "tomorrow"}), "'tomorrow'"},
      {order_with({"--at", "2026-02-30T10:00:00Z"}), "no such date"},
      {order_with({"--in", "-5m"}), "negative"},
      {order_with({"--in", "400d"}), "horizon"},
      {order_with({"--in", "300d", "--window", "90d"}), "the window 90d ends too late"},
      {order_with({"--in", "1h", "--window", "-10m"}), "the window -10m is negative"},
      {order_with({"--in", "1h", "--window", "soon"}), "'soon'"},
      {order_with({"--in", "1h", "--job-key", "k", "--on-conflict", "debounce"}), "debounce needs max_wait"},
      {order_with({"--in", "1h", "--on-conflict", "debounce", "--max-wait", "6h"}), "debounce needs a job key"},
      {order_with({"--in", "1h", "--job-key", "k", "--on-conflict", "debounce", "--max-wait", "30s"}),
       "max_wait 30s is under the slot (1m)"},
      {order_with({"--in", "1h", "--job-key", "k", "--max-wait", "6h"}),
       "max_wait applies to on_conflict debounce or collect, not 'error'"},
      {order_with({"--in", "1h", "--job-key", "k", "--on-conflict", "collect"}),
       "collect needs max_wait, its ceiling: the longest a payload waits for its digest"},
      {order_with({"--in", "1h", "--on-conflict", "collect", "--max-wait", "30m"}), "collect needs a job key"},
      {order_with({"--in", "1h", "--job-key", "k", "--on-conflict", "collect", "--max-wait", "-30m"}),
       "max_wait -30m is under the slot"},
      {order_with({"--in", "1h", "--job-key", "k", "--dedupe-for", "0s"}), "the dedupe window 0s is not positive"},
      {order_with({"--in", "1h", "--job-key", "k", "--dedupe-for", "1d", "--dedupe-outcomes", "done,exploded"}),
       "'exploded'"},
      {order_with({"--in", "1h", "--job-key", ""}), "job key is empty"},
      {order_with({"--in", "1h", "--job-key", "caf\xC3"}), "the job key is not valid UTF-8"},
      {order_with({"--in", "1h", "--job-key", std::string(1025, 'k')}), "the job key is 1025 bytes long"},
      {order_with({"--in", "1h", "--payload", R"({"a": "\u0000"})"}), "contains a NUL byte"},
      {order_with({"--in", "1h", "--at", "@1800000000"}), "not both"},
      {order_with({}), "--at TIME or --in DURATION"},
      {order_with({"--in", "1h", "--on-conflict", "merge"}), "'merge'"},
      {order_with({"--in", "1h", "--priority", "12"}), "the priority 12 is not one of 0 (first) to 9 (last)"},
      {order_with({"--in", "1h", "--priority", "-1"}), "the priority -1 is not one of 0 (first) to 9 (last)"},
      {order_with({"--in", "1h", "--priority", "high"}), "'high'"},
      {order_with({"--in", "1h", "--traceparent", "00-abc-def-01"}),
       "the traceparent '00-abc-def-01' is not a W3C traceparent"},
      {order_with({"--in", "1h", "--tracestate", "vendor=1"}), "a tracestate needs a traceparent"},
      {order_with({"--in", "1h", "--traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
                   "--tracestate", "no member"}),
       "the tracestate 'no member' is not a W3C tracestate"},
      {{"schedule", "--entity-name", "orders", "--entity-key", "1", "--in", "1h"}, "--job"},
      {{"cancel", "--job-key", "a", "--id", "1"}, "exactly one of --job-key and --id"},
      {{"cancel"}, "exactly one of --job-key and --id"},
      {{"reschedule", "--id", "x", "--in", "1h"}, "--id"},
      {{"history", "--outcome", "exploded"}, "unknown outcome 'exploded'"},
      {{"list", "--limit", "0"}, "limit"},
      {{"list", "--due-before", "soon"}, "'soon'"},
  }, url);
  CHECK(pending_count(url) == 0);
}

TEST_CASE("a key conflict exits 2 naming the key and the existing id; replace and keep do not") {
  const std::string url = create_migrated_database();
  const ProcessResult first = run_prescient(with_db(order_with({"--in", "1h", "--job-key", "k", "--json"}), url));
  REQUIRE(first.exit_code == 0);
  const auto id = json::parse(first.out)["id"].get<long long>();
  const ProcessResult conflict = run_prescient(with_db(order_with({"--in", "2h", "--job-key", "k"}), url));
  CHECK(conflict.exit_code == 2);
  CHECK_THAT(conflict.err, Catch::Contains("'k'") && Catch::Contains("id " + std::to_string(id)));
  const ProcessResult keep =
      run_prescient(with_db(order_with({"--in", "2h", "--job-key", "k", "--on-conflict", "keep", "--json"}), url));
  CHECK(json::parse(keep.out)["status"] == "kept");
  const ProcessResult replace =
      run_prescient(with_db(order_with({"--in", "2h", "--job-key", "k", "--on-conflict", "replace", "--json"}), url));
  CHECK(json::parse(replace.out)["status"] == "replaced");
  CHECK(json::parse(replace.out)["id"] == id);
  CHECK(pending_count(url) == 1);
}

TEST_CASE("cancel, then show gives the trace of the cancelled key; a second cancel exits 3") {
  const std::string url = create_migrated_database();
  REQUIRE(run_prescient(with_db(order_with({"--in", "1h", "--job-key", "order_unshipped:42"}), url)).exit_code == 0);
  const ProcessResult cancel = run_prescient(with_db({"cancel", "--job-key", "order_unshipped:42", "--by", "alice"}, url));
  CHECK(cancel.exit_code == 0);
  CHECK_THAT(cancel.out, Catch::StartsWith("cancelled id="));
  const ProcessResult again = run_prescient(with_db({"cancel", "--job-key", "order_unshipped:42"}, url));
  CHECK(again.exit_code == 3);
  CHECK_THAT(again.err, Catch::Contains("no pending check with job key 'order_unshipped:42'"));

  const ProcessResult show = run_prescient(with_db({"show", "--job-key", "order_unshipped:42", "--json"}, url));
  REQUIRE(show.exit_code == 0);
  const json trace = json::parse(show.out);
  CHECK(trace["pending"].is_null());
  REQUIRE(trace["history"].size() == 1);
  CHECK(trace["history"][0]["outcome"] == "cancelled");
  CHECK(trace["history"][0]["finished_by"] == "alice");
  const ProcessResult show_text = run_prescient(with_db({"show", "--job-key", "order_unshipped:42"}, url));
  CHECK_THAT(show_text.out, Catch::Contains("pending: none") && Catch::Contains("cancelled"));
  const ProcessResult missing = run_prescient(with_db({"show", "--job-key", "never"}, url));
  CHECK(missing.exit_code == 3);

  const ProcessResult history = run_prescient(with_db({"history", "--outcome", "cancelled", "--json"}, url));
  CHECK(json::parse(history.out).size() == 1);
  CHECK(json::parse(run_prescient(with_db({"history", "--outcome", "done", "--json"}, url)).out).empty());
}

TEST_CASE("reschedule by id and by key; list filters") {
  const std::string url = create_migrated_database(900);
  const auto first = json::parse(run_prescient(with_db(order_with({"--in", "1h", "--job-key", "a", "--json"}), url)).out);
  run_prescient(with_db({"schedule", "--job", "noop", "--entity-name", "users", "--entity-key", "7", "--in", "2h", "--job-key",
                         "b", "--group-key", "g1"},
                        url));
  const ProcessResult by_id = run_prescient(
      with_db({"reschedule", "--id", std::to_string(first["id"].get<long long>()), "--in", "5h", "--json"}, url));
  REQUIRE(by_id.exit_code == 0);
  CHECK(json::parse(by_id.out)["job_key"] == "a");
  CHECK(json::parse(by_id.out)["next_check_at"] != first["next_check_at"]);
  const ProcessResult by_key = run_prescient(with_db({"reschedule", "--job-key", "b", "--in", "30m"}, url));
  CHECK(by_key.exit_code == 0);
  CHECK_THAT(by_key.out, Catch::StartsWith("rescheduled id="));
  CHECK(run_prescient(with_db({"reschedule", "--job-key", "zzz", "--in", "30m"}, url)).exit_code == 3);

  const auto all = json::parse(run_prescient(with_db({"list", "--json"}, url)).out);
  REQUIRE(all.size() == 2);
  CHECK(all[0]["job_key"] == "b");  // soonest first: b moved to 30 minutes from now
  CHECK(json::parse(run_prescient(with_db({"list", "--entity-name", "users", "--json"}, url)).out).size() == 1);
  CHECK(json::parse(run_prescient(with_db({"list", "--group-key", "g1", "--json"}, url)).out)[0]["job_key"] == "b");
  CHECK(json::parse(run_prescient(with_db({"list", "--job", "other", "--json"}, url)).out).empty());
  CHECK(json::parse(run_prescient(with_db({"list", "--limit", "1", "--json"}, url)).out).size() == 1);
  const ProcessResult table = run_prescient(with_db({"list"}, url));
  CHECK_THAT(table.out, Catch::StartsWith("ID") && Catch::Contains("users"));
}

TEST_CASE("bulk: a file with one bad line writes nothing; --skip-invalid writes the rest") {
  const std::string url = create_migrated_database();
  const std::string file = write_file("bulk.jsonl",
                                      "{\"job\":\"noop\",\"entity_name\":\"o\",\"entity_key\":\"1\",\"in\":\"1h\",\"job_key\":\"a\"}\n"
                                      "\n"
                                      "{\"job\":\"noop\",\"entity_name\":\"o\",\"entity_key\":\"2\",\"in\":\"-1h\"}\n"
                                      "{\"job\":\"noop\",\"entity_name\":\"o\",\"entity_key\":\"3\",\"at\":\"@1\"}\n");
  const ProcessResult strict = run_prescient(with_db({"schedule", "--file", file}, url));
  CHECK(strict.exit_code == 2);
  CHECK_THAT(strict.err, Catch::Contains("line 3:") && Catch::Contains("negative") &&
                             Catch::Contains("nothing was scheduled"));
  CHECK(pending_count(url) == 0);

  const ProcessResult lenient = run_prescient(with_db({"schedule", "--file", file, "--skip-invalid", "--json"}, url));
  CHECK(lenient.exit_code == 0);
  CHECK_THAT(lenient.err, Catch::Contains("line 3:") && !Catch::Contains("line 4:"));
  const json results = json::parse(lenient.out);
  REQUIRE(results.size() == 2);
  CHECK(results[0]["line"] == 1);
  CHECK(results[1]["line"] == 4);  // @1 is long past: due at the next slot
  CHECK(pending_count(url) == 2);

  // From standard input, with a key that is now taken: reported and skipped.
  const ProcessResult again = run_prescient(with_db({"schedule", "--file", "-", "--skip-invalid"}, url), {},
                                            "{\"job\":\"noop\",\"entity_name\":\"o\",\"entity_key\":\"1\",\"in\":\"1h\",\"job_key\":\"a\"}\n");
  CHECK(again.exit_code == 0);
  CHECK_THAT(again.err, Catch::Contains("line 1: a pending check with job key 'a' already exists"));
  CHECK(pending_count(url) == 2);
  CHECK(run_prescient(with_db({"schedule", "--file", "/nonexistent/x"}, url)).exit_code == 2);
  // A field the file does not know: the line named with every field it knows.
  const ProcessResult unknown = run_prescient(with_db({"schedule", "--file", "-"}, url), {},
                                              "{\"job\":\"noop\",\"entity_name\":\"o\",\"entity_key\":\"9\",\"colour\":1}\n");
  CHECK(unknown.exit_code == 2);
  CHECK_THAT(unknown.err, Catch::Contains("line 1: unknown field 'colour' (fields: job, entity_name, entity_key, at, in, "
                                          "window, job_key, group_key, payload, by, on_conflict, max_wait, dedupe_for, "
                                          "priority, traceparent, tracestate, calendar, max_checks, max_attempts, backoff)"));
  CHECK(pending_count(url) == 2);
  ::unlink(file.c_str());
}

TEST_CASE("two processes scheduling the same key at the same moment: one row, one documented conflict") {
  const std::string url = create_migrated_database();
  for (int round = 0; round < 5; ++round) {
    const std::string key = "race-" + std::to_string(round);
    ProcessResult a, b;
    std::thread ta([&] { a = run_prescient(with_db(order_with({"--in", "1h", "--job-key", key}), url)); });
    std::thread tb([&] { b = run_prescient(with_db(order_with({"--in", "1h", "--job-key", key}), url)); });
    ta.join();
    tb.join();
    INFO(a.err << b.err);
    CHECK(a.exit_code + b.exit_code == 2);  // one 0, one 2
    const ProcessResult& loser = a.exit_code == 2 ? a : b;
    CHECK_THAT(loser.err, Catch::Contains("already exists"));
  }
  CHECK(pending_count(url) == 5);
}

TEST_CASE("purge --history drops whole old months and keeps the recent rows; it says how many went") {
  const std::string url = create_migrated_database(60);
  {
    auto db = connect_to(url);
    // 4 months of partitions from 400 days ago, 100 rows in them; 5 recent rows.
    *db << "SELECT prescient.ensure_history_partitions(now() - interval '400 days')";
    *db << "INSERT INTO prescient.job_history (id, job, entity_name, entity_key, payload, first_check_at, last_check_at,"
           "    check_count, attempts, enqueued_on, enqueued_by, finished_at, finished_by, outcome)"
           " SELECT g, 'noop', 'o', g::text, '{}', t, t, 1, 0, t, 'test', t, 'test', 'done'"
           "   FROM generate_series(1, 105) g,"
           "        LATERAL (SELECT now() - CASE WHEN g <= 100 THEN interval '390 days' ELSE interval '1 hour' END AS t) x";
  }
  const ProcessResult purged =
      run_prescient(with_db({"purge", "--older-than", "30d", "--history", "--events", "--json"}, url));
  REQUIRE(purged.exit_code == 0);
  const json report = json::parse(purged.out);
  CHECK(report["history"] == 100);
  CHECK(report["history_months_dropped"].get<int>() >= 1);
  CHECK(report["events"] == 0);
  const ProcessResult left = run_prescient(with_db({"history", "--json", "--limit", "1000"}, url));
  REQUIRE(left.exit_code == 0);
  CHECK(json::parse(left.out).size() == 5);
  const ProcessResult nothing = run_prescient(with_db({"purge", "--older-than", "30d"}, url));
  CHECK(nothing.exit_code == 2);
  CHECK_THAT(nothing.err, Catch::Contains("--history, --dead-letters and/or --events"));
  const ProcessResult both = run_prescient(with_db({"purge", "--older-than", "30d", "--retention"}, url));
  CHECK(both.exit_code == 2);
  CHECK_THAT(both.err, Catch::Contains("--retention takes its cut-offs from prescient.settings"));
}

TEST_CASE("purge keeps dead letters unless told; --retention applies the settings, and none are set at first") {
  const std::string url = create_migrated_database(60);
  {
    auto db = connect_to(url);
    *db << "INSERT INTO prescient.job_history (id, job, entity_name, entity_key, payload, first_check_at, last_check_at,"
           "    check_count, attempts, enqueued_on, enqueued_by, finished_at, finished_by, outcome, retried)"
           " SELECT g, 'noop', 'o', g::text, '{}', t, t, 1, 5, t, 'test', t, 'test', 'failed', g = 2"
           "   FROM generate_series(1, 3) g, LATERAL (SELECT now() - interval '40 days' AS t) x";
  }
  // Nothing is set after migrate: --retention removes nothing.
  const ProcessResult kept = run_prescient(with_db({"purge", "--retention", "--json"}, url));
  REQUIRE(kept.exit_code == 0);
  CHECK(json::parse(kept.out)["history"] == 0);
  CHECK(json::parse(kept.out)["dead_letters"] == 0);
  // --history takes the retried failure (no longer a dead letter), not the two dead letters.
  const ProcessResult history = run_prescient(with_db({"purge", "--older-than", "30d", "--history", "--json"}, url));
  REQUIRE(history.exit_code == 0);
  CHECK(json::parse(history.out)["history"] == 1);
  const ProcessResult dead = run_prescient(with_db({"purge", "--older-than", "30d", "--dead-letters"}, url));
  REQUIRE(dead.exit_code == 0);
  CHECK_THAT(dead.out, Catch::Contains("2 dead letters"));
  CHECK(count_of(*connect_to(url), "SELECT count(*) FROM prescient.job_history") == 0);
}

TEST_CASE("schedule with a check's own policy: flags and bulk lines set it; SQL's rules refuse a bad one") {
  const std::string url = create_migrated_database(60);
  auto db = connect_to(url);
  const ProcessResult one = run_prescient(with_db({"schedule", "--job", "noop", "--entity-name", "order", "--entity-key",
                                                   "1", "--in", "1h", "--job-key", "own:1", "--max-checks", "unlimited",
                                                   "--max-attempts", "3", "--backoff", "1m..1h"},
                                                  url));
  INFO(one.err);
  REQUIRE(one.exit_code == 0);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job WHERE job_key = 'own:1' AND max_checks = 0"
                      " AND max_attempts = 3 AND backoff_seconds = 60 AND backoff_max_seconds = 3600") == 1);
  const std::string lines =
      R"({"job": "noop", "entity_name": "order", "entity_key": "2", "in": "1h", "job_key": "own:2", "max_checks": 2})"
      "\n"
      R"({"job": "noop", "entity_name": "order", "entity_key": "3", "in": "1h", "job_key": "own:3"})"
      "\n";
  REQUIRE(run_prescient(with_db({"schedule", "--file", "-"}, url), {}, lines).exit_code == 0);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job WHERE job_key = 'own:2' AND max_checks = 2") == 1);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job WHERE job_key = 'own:3' AND max_checks IS NULL") == 1);

  const ProcessResult bad = run_prescient(with_db({"schedule", "--job", "noop", "--entity-name", "order", "--entity-key",
                                                   "4", "--in", "1h", "--job-key", "own:4", "--max-attempts", "0"},
                                                  url));
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Catch::Contains("max_attempts 0 is under 1"));
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job WHERE job_key = 'own:4'") == 0);
  const ProcessResult syntax = run_prescient(with_db({"schedule", "--job", "noop", "--entity-name", "order",
                                                      "--entity-key", "5", "--in", "1h", "--max-checks", "lots"},
                                                     url));
  CHECK(syntax.exit_code == 2);
  CHECK_THAT(syntax.err, Catch::Contains("'lots' is not a whole number"));
}
