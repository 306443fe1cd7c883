// Every table of prescient's says what keeps it from growing for ever (prescient.table_bounds(),
// sql/functions/081): the list is compared with the catalog, so a table added without a bound fails here.
#include <catch2/catch.hpp>
#include <soci/soci.h>

#include "test_database.hpp"

using prescient::testing::connect_to;
using prescient::testing::count_of;
using prescient::testing::create_migrated_database;

namespace {

std::vector<std::string> unbounded_tables(soci::session& db) {
  std::vector<std::string> names(100);
  db << "SELECT t FROM prescient.unbounded_tables() t", soci::into(names);
  return names;
}

}  // namespace

TEST_CASE("every table of the schema is listed with its bound, and the list names only tables there are") {
  auto db = connect_to(create_migrated_database(60));
  CHECK(unbounded_tables(*db).empty());
  // No stale names: each listed table exists.
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.table_bounds() b"
                      " WHERE to_regclass('prescient.' || quote_ident(b.table_name)) IS NULL") == 0);
  // A table bounded by retention names a setting that is a column of prescient.settings.
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.table_bounds() b WHERE b.retention_setting IS NOT NULL"
                      " AND NOT EXISTS (SELECT FROM information_schema.columns c WHERE c.table_schema = 'prescient'"
                      "   AND c.table_name = 'settings' AND c.column_name = b.retention_setting)") == 0);
  // The tables that grow with time (history, timeline, deferrals and their counts, outbox) each have a retention.
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.table_bounds() WHERE retention_setting IS NOT NULL"
                      " AND table_name IN ('job_history', 'check_run', 'flow_deferral', 'flow_figure', 'event')") == 5);
}

TEST_CASE("a table planted without a bound is named, and a partition of a bounded table is not") {
  auto db = connect_to(create_migrated_database(60));
  *db << "CREATE TABLE prescient.audit_log (at timestamptz NOT NULL, what text NOT NULL)";
  *db << "SELECT prescient.ensure_history_partitions('2035-01-01T00:00:00Z'::timestamptz)";
  CHECK(unbounded_tables(*db) == std::vector<std::string>{"audit_log"});
}
