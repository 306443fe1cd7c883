#include "test_database.hpp"

#include <libpq-fe.h>
#include <soci/soci.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "core/fnv.hpp"
#include "db/connection.hpp"
#include "prescient/database.hpp"
#include "prescient/migrations.hpp"

namespace prescient::testing {
namespace {

std::string admin_url() {
  const char* url = std::getenv("PRESCIENT_TEST_DATABASE_URL");
  if (url == nullptr || *url == '\0') {
    throw std::runtime_error(
        "PRESCIENT_TEST_DATABASE_URL is not set: run the tests through scripts/test.sh, which starts PostgreSQL");
  }
  return url;
}

class Registry {
 public:
  ~Registry() {
    try {
      auto admin = connect(admin_url());
      for (const std::string& name : names_) *admin << "DROP DATABASE IF EXISTS " + name + " WITH (FORCE)";
    } catch (...) {
      // The throwaway cluster of scripts/test.sh goes away anyway.
    }
  }
  // options: what follows CREATE DATABASE name (our own text, e.g. a template we made).
  std::string create(const std::string& options = "") {
    static std::atomic<int> counter{0};
    // Our own generated name: only digits and letters, so it is safe as an identifier.
    const std::string name = "prescient_t" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
    auto admin = connect(admin_url());
    *admin << "CREATE DATABASE " + name + (options.empty() ? "" : " " + options);
    const std::lock_guard lock(mutex_);
    names_.push_back(name);
    return with_connection_option(admin_url(), "dbname", name);
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> names_;
};

Registry& registry() {
  static Registry r;
  return r;
}

// The job classes the tests' own registries and test plugins register (tests/plugins), declared in the
// template as a runner with them would declare them at its start (docs/design.md, "The class registry"): a
// test enqueues its checks before it starts the runner that fires them. The example plugin's order_unshipped
// is not among them: tests show a runner declaring it, and enqueue refusing it until then.
constexpr const char* kTestClasses =
    "{counted,emitter,factory_throws,grouped,half_again,hang,hello,hostile,lease_loser,leased_noop,ledger,once,"
    "one_refused,quick,recorded,recorder,scripted,sleeper,sleepy,slow_ledger,stamp,stuck,throws,timed,writer,"
    "zero_timeout}";

}  // namespace

void declare_test_classes(soci::session& db) {
  const std::string classes = kTestClasses;
  db << "SELECT prescient.declare_job_classes(x.c, array_fill('tests'::text, ARRAY[cardinality(x.c)]),"
        " 'test template') FROM (SELECT CAST(:classes AS text[]) AS c) x",
      soci::use(classes);
}

namespace {

// The schema this binary migrates to, as a fingerprint of its migration and function files, and the
// month (migrate makes the history's partitions around it): a template made by an older build or in an
// earlier month (a developer's long-lived cluster) is never taken for the current one.
std::string schema_fingerprint() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::string texts = std::to_string(utc.tm_year) + "-" + std::to_string(utc.tm_mon) + kTestClasses;
  for (const auto& files : {embedded_migrations(), embedded_functions()}) {
    for (const Migration& m : files) texts.append(m.name).append(m.sql);
  }
  return core::fnv1a_hex(texts);
}

// The name of a database migrated at this slot, made if missing. Test processes run in parallel: an
// advisory lock (in the admin database, which they all connect to) lets one make it while the others wait;
// it is migrated under a name of its own and renamed when complete, so a process killed half-way leaves
// nothing that looks ready. It takes no connections, as CREATE DATABASE ... TEMPLATE requires.
std::string migrated_template(long long slot_seconds) {
  const std::string name = "prescient_tpl_" + std::to_string(slot_seconds) + "s_" + schema_fingerprint();
  const std::string partial = name + "_partial";
  auto admin = connect(admin_url());
  constexpr long long kTemplateLock = 0x7072657363746d70;  // "presctmp"
  *admin << "SELECT pg_advisory_lock(" + std::to_string(kTemplateLock) + ")";
  int exists = 0;
  *admin << "SELECT count(*) FROM pg_database WHERE datname = :name", soci::use(name), soci::into(exists);
  if (exists == 0) {
    *admin << "DROP DATABASE IF EXISTS " + partial + " WITH (FORCE)";
    *admin << "CREATE DATABASE " + partial;
    {
      auto db = connect(with_connection_option(admin_url(), "dbname", partial));
      migrate(*db, std::chrono::seconds{slot_seconds});
      declare_test_classes(*db);
    }
    *admin << "ALTER DATABASE " + partial + " RENAME TO " + name;
    *admin << "ALTER DATABASE " + name + " WITH IS_TEMPLATE true ALLOW_CONNECTIONS false";
  }
  *admin << "SELECT pg_advisory_unlock(" + std::to_string(kTemplateLock) + ")";
  return name;
}

}  // namespace

std::string with_connection_option(const std::string& url, const std::string& keyword, const std::string& value) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(url.c_str(), &error);
  if (options == nullptr) throw std::runtime_error("bad connection URL: " + std::string(error));
  std::string out;
  for (const PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    if (o->keyword == keyword || o->val == nullptr || *o->val == '\0') continue;
    out += std::string(o->keyword) + "='" + o->val + "' ";
  }
  PQconninfoFree(options);
  return out + keyword + "='" + value + "'";
}

std::string connection_option(const std::string& url, const std::string& keyword) {
  PQconninfoOption* options = PQconninfoParse(url.c_str(), nullptr);
  if (options == nullptr) throw std::runtime_error("bad connection URL");
  std::string value;
  for (const PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    if (o->keyword == keyword && o->val != nullptr) value = o->val;
  }
  PQconninfoFree(options);
  return value;
}

std::string create_empty_database() { return registry().create(); }

std::string create_migrated_database(long long slot_seconds) {
  // Made once per cluster, slot and schema, then copied: a copy takes milliseconds where migrating takes
  // most of a second, and every test case of the suite is a process of its own (migrate_test still
  // migrates from empty).
  const std::string template_name = migrated_template(slot_seconds);
  return registry().create("TEMPLATE " + template_name);
}

std::unique_ptr<soci::session> connect_to(const std::string& url) { return connect(url); }

long long count_of(soci::session& db, const std::string& query) {
  long long n = -1;
  db << query, soci::into(n);
  return n;
}

std::string plan_of(soci::session& db, const std::string& query, const std::string& options) {
  std::string plan;
  soci::rowset<std::string> lines = db.prepare << "EXPLAIN (" + options + ") " + query;
  for (const std::string& line : lines) plan += line + "\n";
  return plan;
}

std::pair<std::string, std::string> sql_refusal(soci::session& db, const std::string& sql) {
  PGresult* result = PQexec(db::native_connection(db), sql.c_str());
  const char* state = PQresultErrorField(result, PG_DIAG_SQLSTATE);
  const char* primary = PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY);
  std::pair<std::string, std::string> refusal{state != nullptr ? state : "", primary != nullptr ? primary : ""};
  PQclear(result);
  return refusal;
}

}  // namespace prescient::testing
