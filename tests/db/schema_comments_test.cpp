// The schema explains itself where a reader of the database meets it (`\d+`, pg_dump): every table and
// column of prescient has a comment (sql/functions/095_comments.sql).
#include <catch2/catch.hpp>
#include <soci/soci.h>

#include <string>
#include <vector>

#include "test_database.hpp"

using prescient::testing::connect_to;
using prescient::testing::create_migrated_database;

namespace {

// The tables (a partition is described by its parent) and columns of the schema that have no comment.
std::vector<std::string> uncommented(soci::session& db) {
  const soci::rowset<std::string> rows = db.prepare <<
      "SELECT c.relname"
      "  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
      " WHERE n.nspname = 'prescient' AND c.relkind IN ('r', 'p') AND NOT c.relispartition"
      "   AND obj_description(c.oid, 'pg_class') IS NULL"
      " UNION ALL "
      "SELECT c.relname || '.' || a.attname"
      "  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
      "  JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped"
      " WHERE n.nspname = 'prescient' AND c.relkind IN ('r', 'p') AND NOT c.relispartition"
      "   AND col_description(c.oid, a.attnum) IS NULL"
      " ORDER BY 1";
  return {rows.begin(), rows.end()};
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

}  // namespace

TEST_CASE("every table and column of the schema has a comment; one added without is found") {
  auto db = connect_to(create_migrated_database(60));
  const std::vector<std::string> missing = uncommented(*db);
  INFO("without a comment (add one to sql/functions/095_comments.sql): " << joined(missing));
  CHECK(missing.empty());
  CHECK(prescient::testing::count_of(*db, "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                                          " WHERE n.nspname = 'prescient' AND c.relkind IN ('r', 'p')"
                                          "   AND NOT c.relispartition") >= 18);

  // The check can fail: a table and a column a migration adds without a comment are named.
  *db << "CREATE TABLE prescient.planted (id int)";
  *db << "ALTER TABLE prescient.future_job ADD COLUMN planted text";
  CHECK(uncommented(*db) == std::vector<std::string>{"future_job.planted", "planted", "planted.id"});
}

TEST_CASE("the comments say what a table and a column mean: future_job's, as \\d+ shows them") {
  auto db = connect_to(create_migrated_database(60));
  std::string table, column;
  *db << "SELECT obj_description('prescient.future_job'::regclass, 'pg_class')", soci::into(table);
  CHECK_THAT(table, Catch::StartsWith("Pending checks, and only pending checks"));
  *db << "SELECT col_description(a.attrelid, a.attnum) FROM pg_attribute a"
         " WHERE a.attrelid = 'prescient.future_job'::regclass AND a.attname = 'next_check_at'",
      soci::into(column);
  CHECK_THAT(column, Catch::Contains("always on the slot grid, never before"));
}
