// The rules in SQL are small functions that the planner inlines into the statements that call them once a
// row (docs/design.md, "Bulk enqueue sends one array per field"). One that it does not inline is called per
// row through the SQL function executor, a microsecond or more each: priority_problem, declared IMMUTABLE
// over format() (STABLE), cost bulk enqueue 1.1 us of an item's 13. Nothing says so but the speed, so this
// asks the planner about every such function.
#include <catch2/catch.hpp>
#include <libpq-fe.h>
#include <soci/soci.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "test_database.hpp"

using prescient::testing::connect_to;
using prescient::testing::create_migrated_database;
using prescient::testing::plan_of;

namespace {

struct InlinableFunction {
  std::string name, arguments_as_columns, arguments;
};

// The functions of prescient the server counted calls of in this transaction (track_functions = 'all'): those
// that ran as functions, not inlined into their caller's statement.
struct CalledFunction {
  std::string name, language;
  long long calls = 0;
};
std::vector<CalledFunction> functions_called(soci::session& db) {
  soci::rowset<soci::row> rows = db.prepare << R"sql(
    SELECT p.proname, l.lanname, pg_stat_get_xact_function_calls(p.oid)
      FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
     WHERE p.pronamespace = 'prescient'::regnamespace AND pg_stat_get_xact_function_calls(p.oid) > 0)sql";
  std::vector<CalledFunction> called;
  for (const soci::row& row : rows) {
    called.push_back({row.get<std::string>(0), row.get<std::string>(1), row.get<long long>(2)});
  }
  return called;
}

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
                           "spread_slot_in",
                           "trace_problem", "cron_item_problem", "cron_check_payload_of"}) {
    CHECK(std::find(names.begin(), names.end(), rule) != names.end());
  }
  for (const InlinableFunction& f : functions) {
    *db << "CREATE TEMP TABLE inlining_arguments AS SELECT " + f.arguments_as_columns;
    const std::string plan =
        plan_of(*db, "SELECT prescient." + f.name + "(" + f.arguments + ") FROM inlining_arguments t");
    *db << "DROP TABLE inlining_arguments";
    INFO(f.name << " is called, not inlined: is it declared IMMUTABLE over a STABLE function (format, concat, "
                   "jsonb_build_object), or STRICT? Its plan:\n"
                << plan);
    CHECK(plan.find(f.name + "(") == std::string::npos);
  }
}

// What a call judges once (the classes it names, say) must stay out of each item's expression: inlined into
// a statement over the items, a function's argument is evaluated wherever the body uses it. schedule_problems
// passed unknown_classes(p_job, ...) into array_requests, so each item judged the whole call's classes
// again: 12 s for 10 000 items (without JIT, which cost the CLI's `schedule --file` another 1.2 s a call). The
// server counts the calls of every function that is not inlined (track_functions), in the transaction that
// made them. Both plans a call may run: the first five calls of a connection plan for their arguments, later
// ones may reuse a generic plan, where an argument is a parameter and a nested sub-query's expression is not
// a constant; there spread_slot, given an expression for the slot it names twice, was called for each item
// (2.5x the time of 10 000 items) while the custom plan inlined it.
TEST_CASE("inlining: a bulk call calls no function once per item") {
  auto db = connect_to(create_migrated_database());
  constexpr int kItems = 50;
  *db << "SET track_functions = 'all'";
  for (const std::string plan_cache_mode : {"force_custom_plan", "force_generic_plan"}) {
    INFO("plan_cache_mode " << plan_cache_mode);
    *db << "SET plan_cache_mode = " + plan_cache_mode;
    soci::transaction tx(*db);
    const std::string items = "FROM generate_series(1, " + std::to_string(kItems) + ") g";
    const std::string checks = "(SELECT array_agg('noop'::text) " + items + "), (SELECT array_agg('o'::text) " +
                               items + "), (SELECT array_agg(g::text) " + items +
                               "), (SELECT array_agg(now() + interval '1 day') " + items + ")";
    const std::string keys = "p_job_key => (SELECT array_agg('key-' || g) " + items + ")";
    const std::string schedules = "(SELECT array_agg('s' || g) " + items +
                                  "), (SELECT array_agg('*/5 * * * *'::text) " + items + ")";
    int judged = 0;
    *db << "SELECT count(*) FROM prescient.schedule_problems(" + checks + ")", soci::into(judged);
    CHECK(judged == 0);  // every item is good: each was judged in full
    // Each of schedule_arrays' two statements: items without a key, and items with one.
    *db << "SELECT count(*) FROM prescient.schedule_arrays(" + checks + ")", soci::into(judged);
    CHECK(judged == kItems);
    *db << "SELECT count(*) FROM prescient.schedule_arrays(" + checks + ", " + keys + ")", soci::into(judged);
    CHECK(judged == kItems);
    *db << "SELECT count(*) FROM prescient.cron_problems(" + schedules + ")", soci::into(judged);
    CHECK(judged == 0);
    *db << "SELECT prescient.cron_add_arrays(" + schedules + ")", soci::into(judged);
    CHECK(judged == kItems);
    const std::vector<CalledFunction> called = functions_called(*db);
    for (const CalledFunction& f : called) {
      INFO(f.name << " was called " << f.calls << " times for " << kItems << " items");
      CHECK(f.calls < kItems);
    }
    CHECK(!called.empty());  // the server counted: the four calls themselves are among the rows
    tx.rollback();
  }
}

// The same for one enqueue, whose rules PL/pgSQL evaluates as expressions: a rule that uses an argument twice
// is not inlined when that argument costs something (debounced_slot of spread_slot(...)), and is then planned
// again at every call: 47 us of schedule()'s 210 in a transaction of its own. once_problem, the debounce's
// and dedupe's rule, has a sub-SELECT and is never inlined; it runs only for those requests.
TEST_CASE("inlining: an enqueue calls none of its SQL rules as a function") {
  auto db = connect_to(create_migrated_database());
  *db << "SET track_functions = 'all'";
  soci::transaction tx(*db);
  for (const std::string args : {"'k1', now() + interval '1 hour'",
                                 "'k2', now() + interval '1 hour', p_job_key => 'j2', p_window => interval '10 minutes',"
                                 " p_priority => 0",
                                 "'k2', now() + interval '2 hours', p_job_key => 'j2', p_on_conflict => 'replace',"
                                 " p_window => interval '10 minutes'",
                                 "'k3', now() + interval '1 hour',"
                                 " p_traceparent => '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'"}) {
    int rows = 0;
    *db << "SELECT count(*) FROM prescient.schedule('noop', 'e', " + args + ", p_allow_unknown_class => true)",
        soci::into(rows);
    CHECK(rows == 1);
  }
  const std::vector<CalledFunction> called = functions_called(*db);
  for (const CalledFunction& f : called) {
    INFO(f.name << " (" << f.language << ") was called " << f.calls << " times");
    CHECK(f.language != "sql");
  }
  CHECK(std::ranges::count(called, "schedule", &CalledFunction::name) == 1);  // the server counted
  tx.rollback();
}

// Inlined into the caller's statement, a bulk function is planned with its items' number known: 10 000 items
// of schedule_problems were estimated at 13 million rows, and JIT compiling that plan took 1.2 s of the call's
// 1.3 (the CLI's `schedule --file`, 10 000 lines a call, at 7 000 lines a second). Each item's judgment costs
// microseconds; compiling it never pays. The arrays are literals here, as the CLI's parameters are to the
// planner of its unnamed statement.
TEST_CASE("inlining: a bulk call of 10 000 items is not JIT-compiled") {
  auto db = connect_to(create_migrated_database());
  // With its costs: EXPLAIN says nothing of JIT without them.
  const auto costed_plan_of = [&](const std::string& query) { return plan_of(*db, query, "COSTS ON"); };
  // JIT works on this server, so a plan that would use it says so.
  CHECK(costed_plan_of("SELECT sum(g) FROM generate_series(1, 10) g").find("JIT") == std::string::npos);
  *db << "SET jit_above_cost = 0";
  CHECK(costed_plan_of("SELECT sum(g) FROM generate_series(1, 10) g").find("JIT") != std::string::npos);
  *db << "RESET jit_above_cost";
  constexpr int kItems = 10000;
  const auto literal = [](const std::function<std::string(int)>& item) {
    std::string out = "'{";
    for (int i = 0; i < kItems; ++i) out += (i ? "," : "") + item(i);
    return out + "}'";
  };
  const std::string checks = literal([](int) { return "noop"; }) + ", " + literal([](int) { return "o"; }) + ", " +
                             literal([](int i) { return std::to_string(i); }) + ", " +
                             literal([](int) { return "\"2030-01-01 00:00:00+00\""; });
  const std::string schedules = literal([](int i) { return "s" + std::to_string(i); }) + ", " +
                                literal([](int) { return "\"*/5 * * * *\""; });
  for (const std::string& call : {"prescient.schedule_problems(" + checks + ")",
                                  "prescient.cron_problems(" + schedules + ")"}) {
    const std::string plan = costed_plan_of("SELECT * FROM " + call);
    INFO(call.substr(0, 40) << "...: " << plan.substr(0, 2000));
    CHECK(plan.find("JIT") == std::string::npos);
  }
}

// A bulk enqueue's own statements too: 1 000 items a call is the clients' and the CLI's batch, and a rule
// that made the planner's estimate cross jit_above_cost (the payload's bound read by a join with the
// settings) had every call JIT-compiled: 250 ms instead of 13. auto_explain, at LOG to this session, shows the
// plans of the statements schedule_arrays runs, and a JIT-compiled one says "JIT".
TEST_CASE("inlining: a bulk enqueue of 1 000 items runs no JIT-compiled statement") {
  const std::string url = create_migrated_database();
  PGconn* conn = PQconnectdb(url.c_str());
  REQUIRE(PQstatus(conn) == CONNECTION_OK);
  std::string logged;
  PQsetNoticeProcessor(
      conn, [](void* out, const char* message) { *static_cast<std::string*>(out) += message; }, &logged);
  const auto run = [&](const std::string& sql) {
    PGresult* result = PQexec(conn, sql.c_str());
    const ExecStatusType status = PQresultStatus(result);
    PQclear(result);
    REQUIRE((status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK));
  };
  run("LOAD 'auto_explain'");
  run("SET auto_explain.log_min_duration = 0");
  run("SET auto_explain.log_nested_statements = on");
  run("SET client_min_messages = log");
  // JIT works here: a statement over the threshold says so.
  run("SET jit_above_cost = 0");
  run("SELECT sum(g) FROM generate_series(1, 10) g");
  CHECK(logged.find("JIT") != std::string::npos);
  run("RESET jit_above_cost");
  logged.clear();
  const std::string items = "FROM generate_series(1, 1000) g";
  run("SELECT count(*) FROM prescient.schedule_arrays((SELECT array_agg('noop'::text) " + items +
      "), (SELECT array_agg('orders'::text) " + items + "), (SELECT array_agg(g::text) " + items +
      "), (SELECT array_agg(now() + interval '1 day') " + items + "), p_payload => (SELECT array_agg('{\"n\": ' || g || '}') " +
      items + "))");
  PQfinish(conn);
  CHECK(logged.find("schedule_arrays") != std::string::npos);  // the plans were logged
  INFO(logged.substr(0, 4000));
  CHECK(logged.find("JIT") == std::string::npos);
}
