// The rules in SQL are small functions that the planner inlines into the statements that call them once a
// row (docs/design.md, "Bulk enqueue sends one array per field"). One that it does not inline is called per
// row through the SQL function executor, a microsecond or more each: priority_problem, declared IMMUTABLE
// over format() (STABLE), cost bulk enqueue 1.1 us of an item's 13. Nothing says so but the speed, so this
// asks the planner about every such function.
#include <catch2/catch.hpp>
#include <soci/soci.h>

#include <algorithm>
#include <string>
#include <vector>

#include "test_database.hpp"

using prescient::testing::connect_to;
using prescient::testing::create_migrated_database;
using prescient::testing::verbose_plan_of;

namespace {

struct InlinableFunction {
  std::string name, arguments_as_columns, arguments;
};

// prescient's scalar SQL functions that the planner may inline: not SECURITY DEFINER, no SET, declared
// IMMUTABLE or STABLE, no polymorphic argument, and a body without a sub-query (a FROM after a SELECT, or
// EXISTS: the planner inlines only a single expression). Each with its arguments as typed columns of a
// one-row table (so that nothing is folded as a constant) and as that table's columns.
std::vector<InlinableFunction> inlinable_functions(soci::session& db) {
  std::vector<InlinableFunction> out;
  soci::rowset<soci::row> rows = db.prepare << R"sql(
    SELECT p.proname,
           coalesce((SELECT string_agg(format('NULL::%s AS a%s', format_type(t, NULL), n), ', ' ORDER BY n)
                       FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY AS u(t, n)), '1 AS a0'),
           coalesce((SELECT string_agg(format('t.a%s', n), ', ' ORDER BY n)
                       FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY AS u(t, n)), '')
      FROM pg_proc p
     WHERE p.pronamespace = 'prescient'::regnamespace AND p.prolang = (SELECT oid FROM pg_language WHERE lanname = 'sql')
       AND p.prokind = 'f' AND NOT p.proretset AND NOT p.prosecdef AND p.proconfig IS NULL
       AND p.provolatile IN ('i', 's')
       AND NOT EXISTS (SELECT FROM unnest(p.proargtypes::oid[]) t
                        WHERE t::regtype::text IN ('anyarray', 'anyelement', 'anycompatible', 'anycompatiblearray'))
       AND pg_get_functiondef(p.oid) !~* '\mSELECT\M.*\mFROM\M|\mEXISTS\M'
     ORDER BY p.proname)sql";
  for (const soci::row& row : rows) {
    out.push_back({row.get<std::string>(0), row.get<std::string>(1), row.get<std::string>(2)});
  }
  return out;
}

}  // namespace

TEST_CASE("inlining: every rule of a single expression is inlined where it is called") {
  auto db = connect_to(create_migrated_database());
  const std::vector<InlinableFunction> functions = inlinable_functions(*db);
  // The rules of enqueue and of schedules are among them: the list is not empty by accident.
  std::vector<std::string> names;
  for (const InlinableFunction& f : functions) names.push_back(f.name);
  for (const char* rule : {"request_problem", "priority_problem", "window_problem", "slot_for", "spread_slot",
                           "trace_problem", "cron_item_problem", "cron_check_payload_of"}) {
    CHECK(std::find(names.begin(), names.end(), rule) != names.end());
  }
  for (const InlinableFunction& f : functions) {
    *db << "CREATE TEMP TABLE inlining_arguments AS SELECT " + f.arguments_as_columns;
    const std::string plan =
        verbose_plan_of(*db, "SELECT prescient." + f.name + "(" + f.arguments + ") FROM inlining_arguments t");
    *db << "DROP TABLE inlining_arguments";
    INFO(f.name << " is called, not inlined: is it declared IMMUTABLE over a STABLE function (format, concat, "
                   "jsonb_build_object), or STRICT? Its plan:\n"
                << plan);
    CHECK(plan.find(f.name + "(") == std::string::npos);
  }
}
