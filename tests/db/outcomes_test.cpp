// The outcomes a finished check may end with have one home, prescient.outcomes()
// (sql/functions/030_enqueue_rules.sql). The history's constraint and its column comment are derived from it;
// every other place that names outcomes is compared with it here, and a difference names the place to change:
// the table in docs/runner.md (every outcome, with its meaning), and the outcomes C++ and the dashboard name
// (only those they refer to, none the list lacks). A new outcome is a row in the list, the judge that yields
// it, and its row in docs/runner.md: the planted case below proves nothing else has to change.
#include <catch2/catch.hpp>
#include <soci/soci.h>

#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "list_places.hpp"
#include "test_database.hpp"

using prescient::testing::connect_to;
using prescient::testing::create_migrated_database;

namespace {

using Names = std::set<std::string>;

// Every match of `pattern`'s groups in `text`, the groups joined by ": ".
Names matches(const std::string& text, const std::string& pattern) {
  Names out;
  const std::regex re(pattern);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it) {
    std::string joined = (*it)[1].str();
    for (std::size_t g = 2; g < it->size(); ++g) joined += ": " + (*it)[g].str();
    out.insert(joined);
  }
  return out;
}

std::string source_file(const std::string& path) {
  std::ifstream in(std::string(PRESCIENT_SOURCE_DIR) + "/" + path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Sources {
  std::string runner_md = source_file("docs/runner.md");
  std::string outcome_hpp = source_file("engine/include/prescient/outcome.hpp");
  std::string app_js = source_file("engine/web/assets/app.js");
};

const std::string kHome = "prescient.outcomes() (sql/functions/030_enqueue_rules.sql)";

Names rows_of(soci::session& db, const std::string& query) {
  soci::rowset<std::string> rows = db.prepare << query;
  return {rows.begin(), rows.end()};
}

// What each place names, against the home: one line per outcome a place lacks or has beyond it.
std::vector<std::string> disagreements(soci::session& db, const Sources& sources) {
  const Names home = rows_of(db, "SELECT outcome FROM prescient.outcomes()");
  const Names home_meanings = rows_of(db, "SELECT outcome || ': ' || meaning FROM prescient.outcomes()");
  std::smatch table, colours;
  std::regex_search(sources.runner_md, table, std::regex(R"(## How a check ends\n([\s\S]*?)\n## )"));
  std::regex_search(sources.app_js, colours, std::regex(R"(const outcomeColours = \{([^}]*)\})"));
  std::vector<std::string> out = prescient::testing::list_disagreements(home_meanings, kHome, {
      {"the table of outcomes in docs/runner.md (\"How a check ends\"), outcome and meaning",
       matches(table[1].str(), R"(\| `([a-z_]+)` \| ([^|\n]*[^ |\n]) \|)"), true},
  });
  const std::vector<std::string> named = prescient::testing::list_disagreements(home, kHome, {
      {"the outcomes C++ names (engine/include/prescient/outcome.hpp)",
       matches(sources.outcome_hpp, R"re(inline const Outcome Outcome::[a-z_]+\{"([a-z_]+)"\})re"), true, false},
      {"the dashboard's colours (engine/web/assets/app.js, outcomeColours)", matches(colours[1].str(), R"(([a-z_]+):)"),
       true, false},
  });
  out.insert(out.end(), named.begin(), named.end());
  return out;
}

// Writes a history row that ended with `outcome`: what the constraint says of it.
std::string history_row_with(soci::session& db, const std::string& outcome) {
  try {
    db << "INSERT INTO prescient.job_history (id, job, entity_name, entity_key, payload, check_count, attempts,"
          " first_check_at, last_check_at, enqueued_on, enqueued_by, finished_at, finished_by, outcome)"
          " VALUES (1, 'noop', 'o', '1', '{}', 1, 0, now(), now(), now(), 'test', now(), 'test', :o)",
        soci::use(outcome);
    return "written";
  } catch (const soci::soci_error& e) {
    return e.what();
  }
}

const char* kListWithGuardAge =
    "CREATE OR REPLACE FUNCTION prescient.outcomes() RETURNS TABLE (outcome text, meaning text)"
    " LANGUAGE sql IMMUTABLE AS $$ SELECT * FROM (VALUES"
    " ('done', 'the job answered nothing more: no need to look again'),"
    " ('cancelled', 'cancelled by an application, or replaced by a schedule''s cancel_previous'),"
    " ('failed', 'its runs failed max_attempts times in a row: a dead letter'),"
    " ('guard_max_checks', 'a guard: it asked to be looked at again after max_checks runs'),"
    " ('guard_past', 'a guard: it asked to be looked at again at or before the time its run was asked for'),"
    " ('guard_horizon', 'a guard: it asked to be looked at again beyond max_horizon'),"
    " ('deadline_missed', 'a schedule''s occurrence came later than its deadline'),"
    " ('overlap_skipped', 'a schedule''s occurrence its overlap policy skipped: an earlier one was pending or running'),"
    " ('guard_age', 'a guard: it was older than its class allows')) v $$";

}  // namespace

TEST_CASE("outcomes: every place names what prescient.outcomes() names") {
  auto db = connect_to(create_migrated_database());
  CHECK(disagreements(*db, Sources{}) == std::vector<std::string>{});
  std::string comment;
  *db << "SELECT col_description('prescient.job_history'::regclass, attnum) FROM pg_attribute"
         " WHERE attrelid = 'prescient.job_history'::regclass AND attname = 'outcome'",
      soci::into(comment);
  for (const std::string& outcome : rows_of(*db, "SELECT outcome FROM prescient.outcomes()")) {
    CHECK_THAT(comment, Catch::Contains(outcome + " ("));
  }
  CHECK_THAT(history_row_with(*db, "exploded"), Catch::Contains("job_history_outcome_check"));
  CHECK(history_row_with(*db, "guard_past") == "written");
}

TEST_CASE("outcomes: a new outcome is a row in the list, the judge and a row in docs/runner.md") {
  auto db = connect_to(create_migrated_database());
  const Sources sources;
  *db << kListWithGuardAge;
  // The history takes it at once: its constraint reads the list.
  CHECK(history_row_with(*db, "guard_age") == "written");
  // The dedupe rule knows it.
  CHECK_NOTHROW(*db << "SELECT count(*) FROM prescient.schedule('noop', 'o', '2', now(), 'k', p_dedupe_for => '1 day',"
                       " p_dedupe_outcomes => '{guard_age}', p_allow_unknown_class => true)");
  // Only the docs' table lacks it: C++ and the dashboard need not name it.
  CHECK(disagreements(*db, sources) ==
        std::vector<std::string>{"the table of outcomes in docs/runner.md (\"How a check ends\"), outcome and meaning "
                                 "lacks guard_age: a guard: it was older than its class allows"});
}

TEST_CASE("outcomes: a place naming an outcome the list lacks is named") {
  auto db = connect_to(create_migrated_database());
  Sources planted;
  planted.app_js.replace(planted.app_js.find("done: '#3a9d5d',"), 0, "guard_gone: '#000000', ");
  planted.outcome_hpp += "inline const Outcome Outcome::exploded{\"exploded\"};\n";
  const std::string row = "| `failed` | its runs failed max_attempts times in a row: a dead letter |";
  planted.runner_md.replace(planted.runner_md.find(row), row.size(), "| `failed` | it failed |");
  CHECK(disagreements(*db, planted) ==
        std::vector<std::string>{
            "the table of outcomes in docs/runner.md (\"How a check ends\"), outcome and meaning lacks failed: its runs "
            "failed max_attempts times in a row: a dead letter",
            "the table of outcomes in docs/runner.md (\"How a check ends\"), outcome and meaning has failed: it failed, "
            "which " + kHome + " does not",
            "the outcomes C++ names (engine/include/prescient/outcome.hpp) has exploded, which " + kHome + " does not",
            "the dashboard's colours (engine/web/assets/app.js, outcomeColours) has guard_gone, which " + kHome +
                " does not"});
}
