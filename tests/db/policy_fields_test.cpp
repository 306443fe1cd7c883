// The fields of a job class's policy have one home, prescient.job_policy_fields()
// (sql/functions/067_job_classes.sql; set_job_policy's p_clear reads it). Every other place that must name the
// same is compared with it here, and a difference names the place to change: the registry's columns, the
// arguments of the SQL functions that take a policy, the C++ structs, the CLI's `jobs set --clear`, the
// dashboard's API and Jobs form, the worker clients' declarations and docs/sql-api.md.
#include <catch2/catch.hpp>
#include <soci/soci.h>

#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "list_places.hpp"
#include "test_database.hpp"

using prescient::testing::connect_to;
using prescient::testing::create_migrated_database;

namespace {

using FieldNames = std::set<std::string>;
using PolicySources = std::map<std::string, std::string>;  // path -> text

const char* const kPolicyHome = "prescient.job_policy_fields() (sql/functions/067_job_classes.sql)";

PolicySources policy_sources() {
  PolicySources out;
  for (const char* path : {"engine/include/prescient/job.hpp", "engine/include/prescient/job_classes.hpp",
                           "engine/cli/cmd_jobs.cpp", "engine/web/web_api.cpp", "engine/web/assets/app.js",
                           "jobs/workers/python/src/prescient/classes.py", "jobs/workers/go/prescient/classes.go",
                           "docs/sql-api.md"}) {
    std::ifstream in(std::string(PRESCIENT_SOURCE_DIR) + "/" + path);
    REQUIRE(in);
    out[path] = {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  return out;
}

// Every match of `pattern`'s first group in `text`, but `except`.
FieldNames field_matches(const std::string& text, const std::string& pattern, const FieldNames& except = {}) {
  FieldNames out;
  const std::regex re(pattern);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it) {
    if (!except.contains((*it)[1].str())) out.insert((*it)[1].str());
  }
  return out;
}

// The text of `pattern`'s first group in `text` ("" when it is not there).
std::string first_group(const std::string& text, const std::string& pattern) {
  std::smatch found;
  return std::regex_search(text, found, std::regex(pattern)) ? found[1].str() : "";
}

// The data members of `struct NAME { ... };` in a header, one declaration a line
// (`std::optional<int> a, b;` declares a and b).
FieldNames struct_members(const std::string& header, const std::string& name) {
  std::string body = first_group(header, "struct " + name + R"( \{\n([\s\S]*?)\n\};)");
  body = std::regex_replace(body, std::regex("//[^\n]*"), "");
  for (std::string before; before != body;) {
    before = body;
    body = std::regex_replace(body, std::regex("<[^<>]*>"), "");  // template arguments, innermost first
  }
  FieldNames out;
  const std::regex declaration(R"(^\s*[\w:]+\s+([\w\s,]+?)\s*(?:=[^;]*)?;)");
  std::smatch found;
  const std::regex one_line("[^\n]+");
  for (auto it = std::sregex_iterator(body.begin(), body.end(), one_line); it != std::sregex_iterator(); ++it) {
    const std::string line = it->str();
    if (line.find('(') != std::string::npos || !std::regex_search(line, found, declaration)) continue;
    for (const std::string& member : field_matches(found[1].str(), R"((\w+))")) out.insert(member);
  }
  return out;
}

// A function's input arguments, without their p_, but `except`.
FieldNames argument_names(soci::session& db, const std::string& function, const FieldNames& except) {
  FieldNames out;
  soci::rowset<std::string> rows = (db.prepare << "SELECT substr(unnest(proargnames), 3) FROM pg_proc"
                                                  " WHERE oid = to_regproc(:f)",
                                    soci::use(function));
  for (const std::string& name : rows) {
    if (!except.contains(name)) out.insert(name);
  }
  return out;
}

// The arguments of `function` that start with `prefix`, without it and without a duration's _seconds.
FieldNames prefixed_argument_names(soci::session& db, const std::string& function, const std::string& prefix) {
  FieldNames out;
  soci::rowset<std::string> rows =
      (db.prepare << "SELECT regexp_replace(substr(a, length(x.prefix) + 3), '_seconds$', '')"
                     "  FROM (SELECT CAST(:prefix AS text) AS prefix) x, pg_proc, unnest(proargnames) AS a"
                     " WHERE oid = to_regproc(:f) AND starts_with(a, 'p_' || x.prefix)",
       soci::use(prefix), soci::use(function));
  for (const std::string& name : rows) out.insert(name);
  return out;
}

// What each place names, against the home: one line per field a place lacks or has beyond it.
std::vector<std::string> policy_disagreements(soci::session& db, const PolicySources& sources) {
  FieldNames home, columns;
  {
    soci::rowset<std::string> rows = db.prepare << "SELECT unnest(prescient.job_policy_fields())";
    for (const std::string& name : rows) home.insert(name);
  }
  {
    // The registry's columns but what is not policy; a duration's column is in seconds.
    soci::rowset<std::string> rows =
        db.prepare << "SELECT regexp_replace(attname, '_seconds$', '') FROM pg_attribute"
                      " WHERE attrelid = 'prescient.job_class'::regclass AND attnum > 0 AND NOT attisdropped"
                      " AND attname NOT IN ('job', 'runs_in', 'origin', 'declared_at', 'declared_by', 'seen_at',"
                      " 'policy_updated_at', 'policy_updated_by')";
    for (const std::string& name : rows) columns.insert(name);
  }
  const auto source = [&](const std::string& path) { return sources.at(path); };
  return prescient::testing::list_disagreements(home, kPolicyHome, {
      {"the registry's policy columns (a new migration: ALTER TABLE prescient.job_class)", columns, true},
      {"prescient.policy_problem's arguments (sql/functions/067_job_classes.sql)",
       argument_names(db, "prescient.policy_problem", {}), true},
      {"prescient.class_limits' coded policy (sql/functions/071_class_limits.sql: p_coded_*, and its precedence)",
       prefixed_argument_names(db, "prescient.class_limits", "coded_"), true},
      {"prescient.class_limits' config defaults (sql/functions/071_class_limits.sql: p_config_*, and its precedence)",
       prefixed_argument_names(db, "prescient.class_limits", "config_"), true},
      {"prescient.set_job_policy's arguments (sql/functions/067_job_classes.sql; a new migration drops the old)",
       argument_names(db, "prescient.set_job_policy", {"job", "by", "now", "clear"}), true},
      {"prescient.declare_worker_class's arguments (sql/functions/067_job_classes.sql; a new migration drops the old)",
       argument_names(db, "prescient.declare_worker_class", {"job", "by", "now"}), true},
      {"JobPolicy (engine/include/prescient/job.hpp)", struct_members(source("engine/include/prescient/job.hpp"), "JobPolicy"),
       false},
      {"JobClassRow (engine/include/prescient/job_classes.hpp)",
       struct_members(source("engine/include/prescient/job_classes.hpp"), "JobClassRow"), false},
      {"JobPolicyChange (engine/include/prescient/job_classes.hpp)",
       struct_members(source("engine/include/prescient/job_classes.hpp"), "JobPolicyChange"), false},
      {"the CLI's jobs set --clear (engine/cli/cmd_jobs.cpp, \"clear these fields (...)\")",
       field_matches(first_group(source("engine/cli/cmd_jobs.cpp"), R"(clear these fields \(([^)]*)\))"), R"((\w+))"), true},
      {"the dashboard's API (engine/web/web_api.cpp, kFields)",
       field_matches(first_group(source("engine/web/web_api.cpp"), R"(kFields\{([^}]*)\})"), R"re("(\w+)")re"), true},
      {"the dashboard's Jobs form (engine/web/assets/app.js, policyFields)",
       field_matches(first_group(source("engine/web/assets/app.js"), R"(const policyFields = \[([^\]]*)\])"), R"('(\w+)')"), true},
      {"the Python client's declare_worker_class (jobs/workers/python/src/prescient/classes.py)",
       field_matches(source("jobs/workers/python/src/prescient/classes.py"), R"(p_(\w+) =>)", {"by"}), true},
      {"the Go client's DeclareWorkerClass (jobs/workers/go/prescient/classes.go)",
       field_matches(source("jobs/workers/go/prescient/classes.go"), R"(p_(\w+) =>)", {"by"}), true},
      {"docs/sql-api.md (\"`p_clear` names the fields to clear\")",
       field_matches(first_group(source("docs/sql-api.md"), R"(`p_clear` names the fields to clear \(([^)]*)\))"), R"(`(\w+)`)"),
       true},
  });
}

}  // namespace

TEST_CASE("policy fields: every place names what prescient.job_policy_fields() names") {
  auto db = connect_to(create_migrated_database());
  CHECK(policy_disagreements(*db, policy_sources()) == std::vector<std::string>{});
}

TEST_CASE("policy fields: a field added in one place only is named in every other place to change") {
  const PolicySources sources = policy_sources();
  {
    // Added to the home alone: each other place lacks it.
    auto db = connect_to(create_migrated_database());
    *db << "CREATE OR REPLACE FUNCTION prescient.job_policy_fields() RETURNS text[] LANGUAGE sql IMMUTABLE"
           " RETURN ARRAY['max_checks', 'max_attempts', 'backoff', 'backoff_max', 'timeout', 'max_age']";
    const std::vector<std::string> added = policy_disagreements(*db, sources);
    REQUIRE(added.size() == 15);
    for (const std::string& line : added) CHECK_THAT(line, Catch::EndsWith(" lacks max_age"));
    CHECK_THAT(added.front(), Catch::StartsWith("the registry's policy columns"));
    CHECK_THAT(added.back(), Catch::StartsWith("docs/sql-api.md"));
  }
  auto db = connect_to(create_migrated_database());
  {
    // A column of the registry alone: the registry is named.
    soci::transaction planted(*db);
    *db << "ALTER TABLE prescient.job_class ADD COLUMN max_age_seconds bigint";
    CHECK(policy_disagreements(*db, sources) ==
          std::vector<std::string>{"the registry's policy columns (a new migration: ALTER TABLE prescient.job_class) "
                                   "has max_age, which " + std::string(kPolicyHome) + " does not"});
    planted.rollback();
  }
  // A client that passes a field the home does not name, and a struct that lacks one: each is named.
  PolicySources planted = sources;
  std::string& go = planted.at("jobs/workers/go/prescient/classes.go");
  go.replace(go.find("p_timeout =>"), 0, "p_max_age => NULL, ");
  std::string& header = planted.at("engine/include/prescient/job_classes.hpp");
  header.replace(header.find("backoff_max, timeout;", header.find("struct JobPolicyChange")),
                 std::string("backoff_max, timeout;").size(), "backoff_max;");
  CHECK(policy_disagreements(*db, planted) ==
        std::vector<std::string>{
            "JobPolicyChange (engine/include/prescient/job_classes.hpp) lacks timeout",
            "the Go client's DeclareWorkerClass (jobs/workers/go/prescient/classes.go) has max_age, which " + std::string(kPolicyHome) +
                " does not"});
}
