// The outcomes a finished check may end with have one home, prescient.history_outcomes()
// (sql/functions/030_enqueue_rules.sql); every other place that must name the same is compared with it here,
// and a difference names the place to change: the history's CHECK constraint, the C++ Outcome table, the
// dashboard's colours and the history's column comment. (The dedupe rule reads the home itself.)
#include <catch2/catch.hpp>
#include <soci/soci.h>

#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "prescient/outcome.hpp"
#include "list_places.hpp"
#include "test_database.hpp"

using namespace prescient;
using prescient::testing::connect_to;
using prescient::testing::create_migrated_database;

namespace {

using Names = std::set<std::string>;

// Every match of `pattern`'s first group in `text`.
Names matches(const std::string& text, const std::string& pattern) {
  Names out;
  const std::regex re(pattern);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it) {
    out.insert((*it)[1].str());
  }
  return out;
}

std::string source_file(const std::string& path) {
  std::ifstream in(std::string(PRESCIENT_SOURCE_DIR) + "/" + path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// What each place names, against the home: one line per outcome a place lacks or has beyond it.
std::vector<std::string> disagreements(soci::session& db, const std::string& app_js) {
  Names home;
  {
    soci::rowset<std::string> rows = db.prepare << "SELECT unnest(prescient.history_outcomes())";
    for (const std::string& name : rows) home.insert(name);
  }
  std::string constraint, comment;
  db << "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'job_history_outcome_check'"
        " AND conrelid = 'prescient.job_history'::regclass",
      soci::into(constraint);
  db << "SELECT col_description('prescient.job_history'::regclass, attnum) FROM pg_attribute"
        " WHERE attrelid = 'prescient.job_history'::regclass AND attname = 'outcome'",
      soci::into(comment);
  Names cpp;
  for (const std::string& name : matches(known_outcomes() + ",", R"(([a-z_]+),)")) cpp.insert(name);
  std::smatch colours;
  std::regex_search(app_js, colours, std::regex(R"(const outcomeColour = \{([^}]*)\})"));
  return prescient::testing::list_disagreements(
      home, "prescient.history_outcomes() (sql/functions/030_enqueue_rules.sql)", {
      {"the history's CHECK constraint (a new migration: ALTER TABLE prescient.job_history ... job_history_outcome_check)",
       matches(constraint, R"('([a-z_]+)'::text)"), true},
      {"the C++ Outcome table (engine/include/prescient/outcome.hpp, engine/src/core/outcome.cpp)", cpp, true},
      {"the dashboard's colours (engine/web/assets/app.js, outcomeColour)", matches(colours[1].str(), R"(([a-z_]+):)"),
       true},
      {"the history's outcome comment (sql/functions/095_comments.sql)", matches(comment, R"(\b([a-z]+(?:_[a-z]+)*)\b)"),
       false},
  });
}

}  // namespace

TEST_CASE("outcomes: every place names what prescient.history_outcomes() names") {
  auto db = connect_to(create_migrated_database());
  CHECK(disagreements(*db, source_file("engine/web/assets/app.js")) == std::vector<std::string>{});
}

TEST_CASE("outcomes: an outcome added in one place only is named in every other place to change") {
  auto db = connect_to(create_migrated_database());
  const std::string app_js = source_file("engine/web/assets/app.js");
  // Added to the home alone: each other place lacks it.
  *db << "CREATE OR REPLACE FUNCTION prescient.history_outcomes() RETURNS text[] LANGUAGE sql IMMUTABLE"
         " RETURN ARRAY['done', 'cancelled', 'failed', 'guard_max_checks', 'guard_past', 'guard_horizon',"
         " 'deadline_missed', 'overlap_skipped', 'guard_age']";
  const std::vector<std::string> added = disagreements(*db, app_js);
  REQUIRE(added.size() == 4);
  for (const std::string& line : added) CHECK_THAT(line, Catch::EndsWith(" lacks guard_age"));
  CHECK_THAT(added[0], Catch::StartsWith("the history's CHECK constraint"));
  CHECK_THAT(added[1], Catch::StartsWith("the C++ Outcome table"));
  // Added to the dashboard alone: the dashboard is named.
  auto fresh = connect_to(create_migrated_database());
  std::string planted = app_js;
  planted.replace(planted.find("done: '#3a9d5d',"), 0, "guard_age: '#000000', ");
  CHECK(disagreements(*fresh, planted) ==
        std::vector<std::string>{"the dashboard's colours (engine/web/assets/app.js, outcomeColour) has guard_age, "
                                 "which prescient.history_outcomes() (sql/functions/030_enqueue_rules.sql) does not"});
}
