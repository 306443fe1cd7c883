#include "test_database.hpp"

#include <libpq-fe.h>
#include <soci/soci.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <vector>

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
  std::string create() {
    static std::atomic<int> counter{0};
    // Our own generated name: only digits and letters, so it is safe as an identifier.
    const std::string name = "prescient_t" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
    auto admin = connect(admin_url());
    *admin << "CREATE DATABASE " + name;
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
  const std::string url = create_empty_database();
  auto db = connect(url);
  migrate(*db, std::chrono::seconds{slot_seconds});
  return url;
}

std::unique_ptr<soci::session> connect_to(const std::string& url) { return connect(url); }

long long count_of(soci::session& db, const std::string& query) {
  long long n = -1;
  db << query, soci::into(n);
  return n;
}

}  // namespace prescient::testing
