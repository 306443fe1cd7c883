// A check's fields have one home: the columns of prescient.future_job. Every other place that must agree is
// compared with it here, and a difference names the place to change: what prescient.schedule takes (and
// schedule_arrays, its bulk twin), the history's columns, the history row (sql/functions/035_history_row.sql),
// the columns every read of a check starts with (engine/src/db/check_columns.hpp) and the bulk file's fields
// (engine/cli/cmd_schedule.cpp). Every column's comment (095_comments.sql) is kept by schema_comments_test.cpp.
#include <catch2/catch.hpp>
#include <soci/soci.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "db/check_columns.hpp"
#include "list_places.hpp"
#include "test_database.hpp"

using prescient::testing::connect_to;
using prescient::testing::create_migrated_database;
using prescient::testing::list_disagreements;

namespace {

using ColumnNames = std::set<std::string>;
const char* const kThisTest = "tests/db/check_fields_test.cpp";

// The columns of future_job that prescient.schedule takes no argument of the same name for, and where each
// comes from. A new column is either an argument of schedule or a line here.
const std::map<std::string, std::string> kNotEnqueuedByName{
    {"id", "the sequence"}, {"first_check_at", "p_at"}, {"next_check_at", "p_at"}, {"asked_for_at", "p_at"},
    {"check_count", "the runs"}, {"attempts", "the runs"}, {"last_error", "the runs"}, {"enqueued_on", "p_now"},
    {"enqueued_by", "p_by"}, {"claimed_by", "the claim"}, {"claimed_until", "the claim"}, {"claim_token", "the claim"},
    {"max_checks", "set_check_policy"}, {"max_attempts", "set_check_policy"}, {"backoff_seconds", "set_check_policy"},
    {"backoff_max_seconds", "set_check_policy"}, {"collects", "p_on_conflict collect"},
    {"collect_since", "p_on_conflict collect"}, {"collect_pending", "p_on_conflict collect"},
    {"collect_pending_since", "p_on_conflict collect"}, {"collect_pending_at", "p_on_conflict collect"},
    {"calendar_version", "p_calendar's current version"}};
// What schedule takes that is no column: how to enqueue, not what the check holds.
const ColumnNames kEnqueueOptions{"at", "by", "on_conflict", "now", "window", "max_wait", "dedupe_for",
                                  "dedupe_outcomes", "allow_unknown_class"};
// schedule_arrays's own arguments beside schedule's: a line's enqueued_by, the statement's defaults.
const ColumnNames kArraysOwn{"enqueued_by", "default_on_conflict", "report_conflicts"};
// A pending check's columns the history does not keep, and the history's own.
const ColumnNames kPendingOnly{"next_check_at", "claimed_by", "claimed_until", "claim_token", "collect_since",
                               "collect_pending_since", "collect_pending_at"};
const ColumnNames kHistoryOnly{"history_id", "last_check_at", "finished_at", "finished_by", "outcome", "run_micros",
                               "retried", "result"};
// The history row's columns the settlement decides rather than carries from the pending check.
const ColumnNames kSettled{"payload", "check_count", "attempts", "last_error"};

// What the places outside the database say, read from the tree; a planted case changes a copy.
struct Places {
  std::string cmd_schedule;                // engine/cli/cmd_schedule.cpp
  std::vector<std::string> check_columns;  // kCheckColumns' columns
};

Places places_in_tree() {
  std::ifstream in(std::string(PRESCIENT_SOURCE_DIR) + "/engine/cli/cmd_schedule.cpp");
  REQUIRE(in);
  Places out{.cmd_schedule = {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()}};
  for (const prescient::db::CheckColumn& column : prescient::db::kCheckColumns) out.check_columns.emplace_back(column.binary);
  return out;
}

std::vector<std::string> table_columns(soci::session& db, const std::string& table) {
  std::vector<std::string> out;
  soci::rowset<std::string> rows = (db.prepare << "SELECT attname FROM pg_attribute WHERE attrelid = to_regclass(:t)"
                                                  " AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
                                    soci::use(table));
  for (const std::string& name : rows) out.push_back(name);
  return out;
}

ColumnNames function_arguments(soci::session& db, const std::string& function) {
  ColumnNames out;
  // Its input arguments: a function returning a table has output ones too.
  soci::rowset<std::string> rows =
      (db.prepare << "SELECT substr(proargnames[i], 3) FROM pg_proc, generate_subscripts(proargnames, 1) i"
                     " WHERE oid = to_regproc(:f) AND (proargmodes IS NULL OR proargmodes[i] IN ('i', 'b'))",
       soci::use(function));
  for (const std::string& name : rows) out.insert(name);
  return out;
}

// `names` but `except`, and with `also`.
ColumnNames adjusted(const ColumnNames& names, const ColumnNames& except, const ColumnNames& also = {}) {
  ColumnNames out = also;
  for (const std::string& name : names) {
    if (!except.contains(name)) out.insert(name);
  }
  return out;
}

void append(std::vector<std::string>& out, const std::vector<std::string>& more) {
  out.insert(out.end(), more.begin(), more.end());
}

// The history row's lines, each `-- column` at its end, against the history's columns in their order; a
// column the pending check and the history share is carried from p_check unless the settlement decides it.
void compare_history_row(std::vector<std::string>& out, const std::string& source,
                         const std::vector<std::string>& history, const ColumnNames& shared) {
  const std::string place = "prescient.history_row (sql/functions/035_history_row.sql)";
  std::vector<std::pair<std::string, std::string>> lines;  // column, its line
  const std::regex line_of(R"(([^\n]*)--\s*(\w+)[^\n]*)");
  for (auto it = std::sregex_iterator(source.begin(), source.end(), line_of); it != std::sregex_iterator(); ++it) {
    lines.emplace_back((*it)[2].str(), (*it)[1].str());
  }
  for (std::size_t i = 0; i < std::max(lines.size(), history.size()); ++i) {
    const std::string made = i < lines.size() ? lines[i].first : "nothing";
    const std::string wanted = i < history.size() ? history[i] : "nothing";
    if (made != wanted) {
      out.push_back(place + " makes " + made + " as column " + std::to_string(i + 1) + ", where job_history has " +
                    wanted);
      return;
    }
    if (shared.contains(made) && !kSettled.contains(made) &&
        lines[i].second.find("p_check." + made) == std::string::npos) {
      out.push_back(place + " does not carry " + made + " from p_check");
    }
  }
}

std::vector<std::string> check_field_disagreements(soci::session& db, const Places& places) {
  std::vector<std::string> out;
  const std::vector<std::string> pending_list = table_columns(db, "prescient.future_job");
  const std::vector<std::string> history_list = table_columns(db, "prescient.job_history");
  const ColumnNames pending(pending_list.begin(), pending_list.end()), history(history_list.begin(), history_list.end());
  const ColumnNames schedule = function_arguments(db, "prescient.schedule");
  const std::string home = "prescient.future_job";

  // Each column is given at enqueue, or its origin is named here; each argument is a column or an option.
  for (const std::string& column : pending) {
    if (!schedule.contains(column) && !kNotEnqueuedByName.contains(column)) {
      out.push_back("prescient.schedule (sql/functions/040_schedule.sql) takes no p_" + column + " for " + home +
                    "'s column " + column + ": add it, or name where the column comes from in " + kThisTest +
                    " (kNotEnqueuedByName)");
    }
  }
  for (const auto& [column, origin] : kNotEnqueuedByName) {
    if (!pending.contains(column)) out.push_back(std::string(kThisTest) + " (kNotEnqueuedByName) names " + column +
                                                 ", which is no column of " + home + ": take it out");
  }
  for (const std::string& argument : schedule) {
    if (!pending.contains(argument) && !kEnqueueOptions.contains(argument)) {
      out.push_back("prescient.schedule (sql/functions/040_schedule.sql) takes p_" + argument + ", which is no column of " +
                    home + ": add the column (a new migration), or name it an option in " + kThisTest +
                    " (kEnqueueOptions)");
    }
  }
  append(out, list_disagreements(schedule, "prescient.schedule",
                                 {{"prescient.schedule_arrays's arguments (sql/functions/050_bulk_enqueue.sql)",
                                   adjusted(function_arguments(db, "prescient.schedule_arrays"), kArraysOwn)}}));
  append(out, list_disagreements(adjusted(pending, kPendingOnly), home,
                                 {{"the history's columns (a new migration: ALTER TABLE prescient.job_history)",
                                   adjusted(history, kHistoryOnly)}}));
  std::string history_row;
  db << "SELECT prosrc FROM pg_proc WHERE oid = 'prescient.history_row'::regproc", soci::into(history_row);
  compare_history_row(out, history_row, history_list, adjusted(pending, kPendingOnly));
  for (const std::string& column : places.check_columns) {
    if (!pending.contains(column) || !history.contains(column)) {
      out.push_back("kCheckColumns (engine/src/db/check_columns.hpp) reads " + column +
                    ", which is not a column of both prescient.future_job and prescient.job_history");
    }
  }
  // The bulk file's fields: schedule's arguments but the file's own flags, `in` beside `at` (a business delay
  // beside a calendar), and the check's own policy as --backoff writes it (D..MAX, so no backoff_max).
  ColumnNames fields;
  const std::string table = places.cmd_schedule.substr(places.cmd_schedule.find("kBulkFields[] = {"));
  const std::regex field(R"re(\n    \{"(\w+)",)re");
  for (auto it = std::sregex_iterator(table.begin(), table.begin() + table.find("\n};"), field);
       it != std::sregex_iterator(); ++it) {
    fields.insert((*it)[1].str());
  }
  append(out, list_disagreements(
                  adjusted(schedule, {"now", "dedupe_outcomes", "allow_unknown_class", "business_delay"},
                           adjusted(function_arguments(db, "prescient.set_check_policy"), {"id", "backoff_max"}, {"in"})),
                  "prescient.schedule and prescient.set_check_policy (but their file-wide flags)",
                  {{"the bulk file's fields (engine/cli/cmd_schedule.cpp, kBulkFields)", fields}}));
  return out;
}

}  // namespace

TEST_CASE("check fields: every place agrees with prescient.future_job's columns") {
  auto db = connect_to(create_migrated_database());
  CHECK(check_field_disagreements(*db, places_in_tree()) == std::vector<std::string>{});
}

TEST_CASE("check fields: a field added in one place only is named in every other place to change") {
  auto db = connect_to(create_migrated_database());
  const Places tree = places_in_tree();
  {
    // A column of future_job alone: schedule and the history are named.
    soci::transaction planted(*db);
    *db << "ALTER TABLE prescient.future_job ADD COLUMN tenant text";
    CHECK(check_field_disagreements(*db, tree) ==
          std::vector<std::string>{
              "prescient.schedule (sql/functions/040_schedule.sql) takes no p_tenant for prescient.future_job's column "
              "tenant: add it, or name where the column comes from in tests/db/check_fields_test.cpp "
              "(kNotEnqueuedByName)",
              "the history's columns (a new migration: ALTER TABLE prescient.job_history) lacks tenant"});
    planted.rollback();
  }
  {
    // On both tables: the history row is named, as it makes a row one column short.
    soci::transaction planted(*db);
    *db << "ALTER TABLE prescient.future_job ADD COLUMN tenant text";
    *db << "ALTER TABLE prescient.job_history ADD COLUMN tenant text";
    const std::vector<std::string> found = check_field_disagreements(*db, tree);
    CHECK(found.size() == 2);
    CHECK(std::count(found.begin(), found.end(),
                     "prescient.history_row (sql/functions/035_history_row.sql) makes nothing as column " +
                         std::to_string(table_columns(*db, "prescient.job_history").size()) +
                         ", where job_history has tenant") == 1);
    planted.rollback();
  }
  // A field the bulk file lacks, and a read of a column that is not there: each named.
  Places planted = tree;
  planted.cmd_schedule.erase(planted.cmd_schedule.find("\n    {\"priority\","), 1);
  planted.check_columns.push_back("tenant");
  CHECK(check_field_disagreements(*db, planted) ==
        std::vector<std::string>{
            "kCheckColumns (engine/src/db/check_columns.hpp) reads tenant, which is not a column of both "
            "prescient.future_job and prescient.job_history",
            "the bulk file's fields (engine/cli/cmd_schedule.cpp, kBulkFields) lacks priority"});
}

TEST_CASE("check fields: a history row out of the history's order, or not carrying a field, is named") {
  const std::vector<std::string> history{"id", "job", "check_count", "priority"};
  const ColumnNames shared{"id", "job", "check_count", "priority"};
  std::vector<std::string> out;
  compare_history_row(out, "p_check.id, -- id\np_check.job, -- job\np_count, -- check_count\n5 -- priority", history,
                      shared);
  CHECK(out == std::vector<std::string>{
                   "prescient.history_row (sql/functions/035_history_row.sql) does not carry priority from p_check"});
  out.clear();
  compare_history_row(out, "p_check.job, -- job\np_check.id, -- id\n", history, shared);
  CHECK(out == std::vector<std::string>{"prescient.history_row (sql/functions/035_history_row.sql) makes job as "
                                        "column 1, where job_history has id"});
}
