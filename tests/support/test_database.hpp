#pragma once
// Fresh databases on the cluster named by PRESCIENT_TEST_DATABASE_URL (set by scripts/test.sh).
// Tests fail, never skip, when it is missing or unreachable.
#include <memory>
#include <string>
#include <utility>

namespace soci {
class session;
}

namespace prescient::testing {

// A new, empty database (no prescient schema), dropped when the test process exits.
// Returns its connection URL.
std::string create_empty_database();

// A new database with every migration applied at the given slot resolution (seconds).
std::string create_migrated_database(long long slot_seconds = 60);
// Declares the job classes the tests' registries and test plugins register, as a runner with them would
// at its start: what a database made by create_migrated_database has, for one a test migrated itself.
void declare_test_classes(soci::session& db);

// The URL with one connection option set (as a key=value string; the test URLs hold no quotes).
std::string with_connection_option(const std::string& url, const std::string& keyword, const std::string& value);
// One connection option of the URL ("" when unset).
std::string connection_option(const std::string& url, const std::string& keyword);

std::unique_ptr<soci::session> connect_to(const std::string& url);

// The single number a query such as "SELECT count(*) ..." returns.
long long count_of(soci::session& db, const std::string& query);

// The plan of a query as EXPLAIN (options) prints it, one line of it a line. VERBOSE, COSTS OFF names the
// functions the planner still calls (whether it inlined one); with costs, the plan also says whether it
// would be JIT-compiled.
std::string plan_of(soci::session& db, const std::string& query, const std::string& options = "VERBOSE, COSTS OFF");

// How SQL refused a statement: its SQLSTATE and primary message (both empty when it did not).
std::pair<std::string, std::string> sql_refusal(soci::session& db, const std::string& sql);

}  // namespace prescient::testing
