#pragma once
// The start of most db tests of checks: a migrated database on a grid, the built-in classes, a manual
// clock and a Client on that clock. A test's own fixture derives from it and adds its classes to
// `registry` and its helpers.
#include <soci/soci.h>

#include <memory>
#include <string>

#include "builtin_jobs.hpp"
#include "prescient/client.hpp"
#include "prescient/clock.hpp"
#include "prescient/registry.hpp"
#include "prescient/time_text.hpp"
#include "test_database.hpp"

namespace prescient::testing {

struct ClientFixture {
  // `now`: the clock's time (ISO 8601); `slot_seconds`: the grid.
  explicit ClientFixture(const char* now, long long slot_seconds = 60, const jobs::BuiltinOptions& builtins = {})
      : url(create_migrated_database(slot_seconds)), db(connect_to(url)), clock(parse_time(now)),
        client(*db, {.clock = &clock}) {
    jobs::register_builtin_jobs(registry, builtins);
  }

  std::string url;
  std::unique_ptr<soci::session> db;
  ManualClock clock;
  Registry registry;
  Client client;
};

}  // namespace prescient::testing
