// The limits in force of a job class, prescient.class_limits (sql/functions/071_class_limits.sql): the one
// home of their precedence (the class's row in the registry, its coded policy, the config file's defaults,
// the settings) and of the bounds the runner needs, for the runner (RunnerStore::class_limits) and the worker
// protocol (worker_settle_together) alike. A check's own policy over them is the judge's (tests/db/judge_test.cpp).
#include <catch2/catch.hpp>
#include <soci/soci.h>

#include <array>
#include <map>
#include <optional>
#include <string>

#include "test_database.hpp"

using prescient::testing::connect_to;
using prescient::testing::create_migrated_database;

namespace {

// A policy's fields as the function takes them (durations in seconds); none: not set.
struct Fields {
  std::optional<long long> max_checks, max_attempts, backoff, backoff_max, timeout;
};

// One row of prescient.class_limits, as text: "max_checks max_attempts backoff backoff_max timeout" (NULL for
// none), then " problem: ..." and " cut from N" when set.
std::string row_text(soci::session& db, const std::string& job, const Fields& coded, const Fields& config) {
  const auto value = [](const std::optional<long long>& n) { return n ? std::to_string(*n) : std::string("NULL"); };
  const auto array = [&](const std::optional<long long>& n, const char* type) {
    return "ARRAY[" + value(n) + "]::" + type + "[]";
  };
  const std::string sql =
      "SELECT concat_ws(' ', coalesce(max_checks::text, 'NULL'), coalesce(max_attempts::text, 'NULL'),"
      " coalesce(backoff_seconds::text, 'NULL'), coalesce(backoff_max_seconds::text, 'NULL'),"
      " coalesce(timeout_seconds::text, 'NULL'), 'problem: ' || coded_problem, 'cut from ' || timeout_cut_from)"
      " FROM prescient.class_limits(ARRAY['" + job + "'], " + array(coded.max_checks, "integer") + ", " +
      array(coded.max_attempts, "integer") + ", " + array(coded.backoff, "bigint") + ", " +
      array(coded.backoff_max, "bigint") + ", " + array(coded.timeout, "bigint") + ", " + value(config.max_checks) +
      ", " + value(config.max_attempts) + ", " + value(config.backoff) + ", " + value(config.backoff_max) + ", " +
      value(config.timeout) + ")";
  std::string text;
  soci::indicator set = soci::i_null;
  db << sql, soci::into(text, set);
  REQUIRE(set == soci::i_ok);
  return text;
}

// A database whose settings say 44 checks, 45 attempts and a 46 s timeout, with the classes `plain` (no policy)
// and `set` (a row whose policy each case sets).
struct ClassLimitsFixture {
  std::unique_ptr<soci::session> db = connect_to(create_migrated_database(60));
  ClassLimitsFixture() {
    *db << "UPDATE prescient.settings SET max_checks = 44, max_attempts = 45, job_timeout_seconds = 46";
    *db << "SELECT prescient.job_class_add('plain', false, 'test', now())";
    *db << "SELECT prescient.job_class_add('set', false, 'test', now())";
  }
  // Sets the registry's row of `set` (the other fields cleared), as prescient jobs set does.
  void registry(const std::string& arguments) {
    *db << "SELECT 1 FROM prescient.set_job_policy('set', p_clear => prescient.job_policy_fields())";
    if (!arguments.empty()) *db << "SELECT 1 FROM prescient.set_job_policy('set', " + arguments + ")";
  }
};

}  // namespace

TEST_CASE_METHOD(ClassLimitsFixture, "class limits: each field from the first that sets it of the registry's row, the coded policy, the config, the settings") {
  // Per field: the registry's value 11, the coded policy's 22, the config's 33; the settings' 44, 45, 46
  // (the backoff has none: NULL, the judge's one slot, doubling).
  struct Field {
    const char* name;
    std::optional<long long> Fields::*member;
    const char* registry_argument;  // set_job_policy's, to 11
    int column;                     // its place in row_text's answer
    const char* setting;
  };
  const std::array<Field, 5> fields{{{"max_checks", &Fields::max_checks, "p_max_checks => 11", 0, "44"},
                                     {"max_attempts", &Fields::max_attempts, "p_max_attempts => 11", 1, "45"},
                                     {"backoff", &Fields::backoff, "p_backoff => '11 seconds'", 2, "NULL"},
                                     {"backoff_max", &Fields::backoff_max, "p_backoff_max => '11 seconds'", 3, "NULL"},
                                     {"timeout", &Fields::timeout, "p_timeout => '11 seconds'", 4, "46"}}};
  const std::array<std::string, 5> none{"44", "45", "NULL", "NULL", "46"};
  const auto expected = [&](const Field& f, const std::string& value) {
    std::array<std::string, 5> columns = none;
    columns[f.column] = value;
    return columns[0] + " " + columns[1] + " " + columns[2] + " " + columns[3] + " " + columns[4];
  };
  for (const Field& f : fields) {
    SECTION(f.name) {
      Fields coded, config;
      coded.*f.member = 22;
      config.*f.member = 33;
      registry(f.registry_argument);
      CHECK(row_text(*db, "set", coded, config) == expected(f, "11"));         // the registry's row
      CHECK(row_text(*db, "plain", coded, config) == expected(f, "22"));       // the coded policy
      CHECK(row_text(*db, "plain", {}, config) == expected(f, "33"));          // the config file's
      CHECK(row_text(*db, "plain", {}, {}) == expected(f, f.setting));         // the settings
      CHECK(row_text(*db, "no_such_class", {}, {}) == expected(f, f.setting)); // a class without a row: the same
      CHECK(row_text(*db, "no_such_class", coded, {}) == expected(f, "22"));
    }
  }
}

TEST_CASE_METHOD(ClassLimitsFixture, "class limits: max_checks 0 in the registry is no limit; the fields of a row are taken one by one") {
  registry("p_max_checks => 0, p_backoff => '1 minute'");
  CHECK(row_text(*db, "set", {.max_checks = 3, .max_attempts = 4, .backoff = 5}, {.max_attempts = 6, .timeout = 7}) ==
        "0 4 60 NULL 7");
}

TEST_CASE_METHOD(ClassLimitsFixture, "class limits: a timeout is at most a day; the registry's beyond it is named for the runner's warning") {
  registry("p_timeout => '2 days'");
  CHECK(row_text(*db, "set", {}, {}) == "44 45 NULL NULL 86400 cut from 172800");
  CHECK(row_text(*db, "plain", {}, {.timeout = 172800}) == "44 45 NULL NULL 86400");  // the config's: cut, unnamed
  *db << "UPDATE prescient.settings SET job_timeout_seconds = 100000";
  CHECK(row_text(*db, "plain", {}, {}) == "44 45 NULL NULL 86400");  // the settings': cut, unnamed
  registry("p_timeout => '1 day'");
  CHECK(row_text(*db, "set", {}, {}) == "44 45 NULL NULL 86400");
}

TEST_CASE_METHOD(ClassLimitsFixture, "class limits: a coded policy the runner cannot honour is named and left out whole") {
  const std::map<std::string, Fields> problems{
      {"max_checks 0 < 1", {.max_checks = 0, .timeout = 7}},
      {"max_attempts 0 < 1", {.max_attempts = 0, .timeout = 7}},
      {"timeout 0s is not within 1s to 1d", {.timeout = 0}},
      {"timeout 86401s is not within 1s to 1d", {.max_checks = 3, .timeout = 86401}},
      {"backoff 0s < 1s", {.backoff = 0, .timeout = 7}},
      {"backoff -5s < 1s", {.backoff_max = -5, .timeout = 7}},
  };
  for (const auto& [problem, coded] : problems) {
    CHECK(row_text(*db, "plain", coded, {.max_checks = 2}) == "2 45 NULL NULL 46 problem: " + problem);
  }
  // Within its bounds, a coded policy is taken: a day's timeout, a second's backoff, a check at most.
  CHECK(row_text(*db, "plain", {.max_checks = 1, .max_attempts = 1, .backoff = 1, .backoff_max = 1, .timeout = 86400}, {}) ==
        "1 1 1 1 86400");
}

TEST_CASE_METHOD(ClassLimitsFixture, "class limits: one row per class in the order given, in one call; none for none") {
  registry("p_max_attempts => 9");
  std::string rows;
  *db << "SELECT string_agg(job || '=' || max_checks || '/' || max_attempts, ' ')"
         " FROM prescient.class_limits(ARRAY['set', 'plain', 'other'], ARRAY[1, NULL, 3])",
      soci::into(rows);
  CHECK(rows == "set=1/9 plain=44/45 other=3/45");
  int count = -1;
  *db << "SELECT count(*) FROM prescient.class_limits('{}')", soci::into(count);
  CHECK(count == 0);
}

TEST_CASE_METHOD(ClassLimitsFixture, "class limits: a worker's settlement takes its class's row over the settings") {
  *db << "UPDATE prescient.settings SET workers_may_pin_clock = true, max_attempts = 5";
  *db << "SELECT prescient.job_class_add('once_py', true)";
  *db << "SELECT prescient.job_class_add('often_py', true)";
  *db << "SELECT 1 FROM prescient.set_job_policy('once_py', p_max_attempts => 1)";
  // One failed attempt of each: the row's max_attempts 1 ends the first; the settings' 5 retry the other.
  std::map<std::string, std::string> outcomes;
  for (const std::string job : {"once_py", "often_py"}) {
    *db << "SELECT 1 FROM prescient.schedule(:job, 'order', '1', '2026-11-21T10:00:00Z',"
           " p_now => '2026-11-21T09:00:00Z')",
        soci::use(job);
    long long id = 0, token = 0;
    *db << "SELECT id, lease_token FROM prescient.worker_take('w', ARRAY[:job], 1, 30, '2026-11-21T10:00:00Z')",
        soci::use(job), soci::into(id), soci::into(token);
    *db << "SELECT outcome FROM prescient.worker_fail('w', ARRAY[:id]::bigint[], ARRAY[:t]::bigint[],"
           " ARRAY['down'], '2026-11-21T10:00:01Z')",
        soci::use(id), soci::use(token), soci::into(outcomes[job]);
  }
  CHECK(outcomes == std::map<std::string, std::string>{{"once_py", "failed"}, {"often_py", "retried"}});
}
