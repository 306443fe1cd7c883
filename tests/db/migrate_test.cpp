#include <catch2/catch.hpp>
#include <soci/soci.h>

#include <thread>

#include "prescient/errors.hpp"
#include "prescient/migrations.hpp"
#include "prescient/checks.hpp"
#include "prescient/settings.hpp"
#include "test_database.hpp"

using namespace prescient;
using prescient::testing::connect_to;
using prescient::testing::count_of;
using prescient::testing::create_empty_database;
using std::chrono::seconds;

namespace {

bool table_exists(soci::session& db, const std::string& name) {
  return count_of(db, "SELECT count(*) FROM pg_class WHERE oid = to_regclass('" + name + "')") == 1;
}

}  // namespace

TEST_CASE("migrate creates the schema on an empty database with the default slot") {
  auto db = connect_to(create_empty_database());
  const MigrationReport report = migrate(*db, std::nullopt);
  CHECK(report.applied.size() == embedded_migrations().size());
  CHECK(report.applied.front() == "0001_init.sql");
  CHECK(report.functions.size() == embedded_functions().size());
  CHECK(report.version == latest_known_migration());
  CHECK(report.slot == seconds{60});
  for (const char* table : {"prescient.future_job", "prescient.job_history", "prescient.cron_schedule", "prescient.event",
                            "prescient.settings", "prescient.schema_migrations"}) {
    INFO(table);
    CHECK(table_exists(*db, table));
  }
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.schema_migrations") ==
        static_cast<long long>(embedded_migrations().size()));
  const Settings s = read_settings(*db);
  CHECK(s.slot == seconds{60});
  CHECK(s.max_horizon == seconds{365 * 86400});
  CHECK(s.max_checks == 5);
  CHECK(s.max_attempts == 5);
  CHECK(s.job_timeout == seconds{30});
  CHECK_NOTHROW(require_current_schema(*db));
}

TEST_CASE("migrate twice is a no-op the second time") {
  auto db = connect_to(create_empty_database());
  migrate(*db, seconds{900});
  const MigrationReport again = migrate(*db, std::nullopt);
  CHECK(again.applied.empty());
  CHECK(again.slot == seconds{900});
  const MigrationReport same_slot = migrate(*db, seconds{900});
  CHECK(same_slot.applied.empty());
}

TEST_CASE("two migrators at once both succeed with one set of tables") {
  const std::string url = create_empty_database();
  for (int round = 0; round < 3; ++round) {
    const std::string fresh = round == 0 ? url : create_empty_database();
    auto a = connect_to(fresh), b = connect_to(fresh);
    MigrationReport ra, rb;
    std::thread ta([&] { ra = migrate(*a, seconds{60}); });
    std::thread tb([&] { rb = migrate(*b, seconds{60}); });
    ta.join();
    tb.join();
    // Exactly one of them applied everything; the other found nothing to do.
    CHECK(ra.applied.size() + rb.applied.size() == embedded_migrations().size());
    CHECK((ra.applied.empty() || rb.applied.empty()));
    CHECK(count_of(*a, "SELECT count(*) FROM prescient.schema_migrations") ==
          static_cast<long long>(embedded_migrations().size()));
    CHECK(count_of(*a, "SELECT count(*) FROM prescient.settings") == 1);
  }
}

TEST_CASE("a slot that does not divide a day is refused before anything is written") {
  auto db = connect_to(create_empty_database());
  CHECK_THROWS_AS(migrate(*db, seconds{420}), InvalidInput);
  CHECK_THROWS_AS(migrate(*db, seconds{0}), InvalidInput);
  CHECK_THROWS_AS(migrate(*db, seconds{2 * 86400}), InvalidInput);
  CHECK_FALSE(table_exists(*db, "prescient.schema_migrations"));
  CHECK(count_of(*db, "SELECT count(*) FROM pg_namespace WHERE nspname = 'prescient'") == 0);
}

TEST_CASE("the slot of an existing database cannot change") {
  auto db = connect_to(create_empty_database());
  migrate(*db, seconds{900});
  CHECK_THROWS_WITH(migrate(*db, seconds{60}), Catch::Contains("--slot 1m") && Catch::Contains("15m"));
  CHECK(read_settings(*db).slot == seconds{900});
  // Not even behind prescient's back.
  CHECK_THROWS_WITH((*db << "UPDATE prescient.settings SET slot_seconds = 60"), Catch::Contains("fixed at creation"));
  CHECK(read_settings(*db).slot == seconds{900});
  CHECK_THROWS((*db << "INSERT INTO prescient.settings (singleton, slot_seconds) VALUES (false, 60)"));
  CHECK_THROWS((*db << "UPDATE prescient.settings SET max_checks = 0"));
}

TEST_CASE("a database with a migration this binary does not know is refused") {
  auto db = connect_to(create_empty_database());
  migrate(*db, std::nullopt);
  *db << "INSERT INTO prescient.schema_migrations (version, name, checksum) VALUES (9999, '9999_future.sql', 'x')";
  CHECK_THROWS_AS(migrate(*db, std::nullopt), DatabaseError);
  CHECK_THROWS_WITH(migrate(*db, std::nullopt), Catch::Contains("9999_future.sql") && Catch::Contains("upgrade"));
  CHECK_THROWS_WITH(require_current_schema(*db), Catch::Contains("upgrade prescient"));
}

TEST_CASE("an applied migration that differs from the embedded file is refused") {
  auto db = connect_to(create_empty_database());
  migrate(*db, std::nullopt);
  *db << "UPDATE prescient.schema_migrations SET checksum = 'edited' WHERE version = 1";
  CHECK_THROWS_WITH(migrate(*db, std::nullopt), Catch::Contains("0001_init.sql") && Catch::Contains("forward-only"));
}

TEST_CASE("function files are applied again when their text changed, and only then") {
  auto db = connect_to(create_empty_database());
  migrate(*db, std::nullopt);
  CHECK(migrate(*db, std::nullopt).functions.empty());
  // As if a newer prescient changed one file's text: it is stale until migrate applies it again.
  *db << "UPDATE prescient.schema_functions SET checksum = 'older' WHERE name = '040_schedule.sql'";
  *db << "DROP FUNCTION prescient.cancel(bigint, text, text, timestamptz)";
  *db << "DELETE FROM prescient.schema_functions WHERE name = '060_cancel_reschedule.sql'";
  CHECK_THROWS_WITH(require_current_schema(*db), Catch::Contains("040_schedule.sql") &&
                                                     Catch::Contains("run `prescient migrate`"));
  const MigrationReport again = migrate(*db, std::nullopt);
  CHECK(again.applied.empty());
  CHECK(again.functions == std::vector<std::string>{"040_schedule.sql", "060_cancel_reschedule.sql"});
  CHECK(count_of(*db, "SELECT count(*) FROM pg_proc WHERE oid = to_regprocedure("
                      "'prescient.cancel(bigint, text, text, timestamptz)')") == 1);
  CHECK_NOTHROW(require_current_schema(*db));
}

TEST_CASE("a database migrated before the functions moved out of the migrations upgrades cleanly") {
  auto db = connect_to(create_empty_database());
  migrate(*db, std::nullopt);
  // What a database migrated by an earlier prescient holds: the checksums of migrations 1 to 13 as they
  // were released (with their functions), and no record of function files.
  *db << "UPDATE prescient.schema_migrations SET checksum = '3e74d3674f22cdea' WHERE version = 1";
  *db << "UPDATE prescient.schema_migrations SET checksum = '1a2d6760c13f0855' WHERE version = 13";
  *db << "DROP TABLE prescient.schema_functions";
  CHECK_THROWS_WITH(require_current_schema(*db), Catch::Contains("run `prescient migrate`"));
  const MigrationReport report = migrate(*db, std::nullopt);
  CHECK(report.applied.empty());
  CHECK(report.functions.size() == embedded_functions().size());
  CHECK_NOTHROW(require_current_schema(*db));
  // Any other checksum is still an edited file.
  *db << "UPDATE prescient.schema_migrations SET checksum = '3e74d3674f22cdeb' WHERE version = 1";
  CHECK_THROWS_WITH(migrate(*db, std::nullopt), Catch::Contains("0001_init.sql") && Catch::Contains("forward-only"));
}

TEST_CASE("commands refuse a database without the schema, or behind the binary") {
  auto db = connect_to(create_empty_database());
  CHECK_THROWS_WITH(require_current_schema(*db), Catch::Contains("run `prescient migrate`"));
  migrate(*db, std::nullopt);
  *db << "DELETE FROM prescient.schema_migrations WHERE version = " + std::to_string(latest_known_migration());
  if (latest_known_migration() > 1) {
    CHECK_THROWS_WITH(require_current_schema(*db), Catch::Contains("run `prescient migrate`"));
  } else {
    CHECK_THROWS_WITH(require_current_schema(*db), Catch::Contains("no prescient schema"));
  }
}

TEST_CASE("a failing migration leaves nothing of itself behind") {
  auto db = connect_to(create_empty_database());
  // A table in the way makes 0001 fail halfway through its statements.
  *db << "CREATE SCHEMA prescient";
  *db << "CREATE TABLE prescient.job_history (x int)";
  CHECK_THROWS_WITH(migrate(*db, std::nullopt), Catch::Contains("0001_init.sql") && Catch::Contains("job_history"));
  CHECK_FALSE(table_exists(*db, "prescient.future_job"));
  CHECK_FALSE(table_exists(*db, "prescient.settings"));
  // One transaction for the whole migrate: not even its bookkeeping table is left.
  CHECK_FALSE(table_exists(*db, "prescient.schema_migrations"));
}

TEST_CASE("microseconds round-trip exactly through at_us and us") {
  auto db = connect_to(create_empty_database());
  migrate(*db, std::nullopt);
  for (const long long us : {0LL, 1LL, -1LL, 1795266900000000LL, 1795266900123457LL, 253402300799999999LL,
                             -2208988800000000LL}) {
    INFO(us);
    long long back = 0;
    std::string text;
    *db << "SELECT prescient.us(prescient.at_us(:us)), prescient.at_us(:us) AT TIME ZONE 'UTC'", soci::use(us, "us"),
        soci::into(back), soci::into(text);
    CHECK(back == us);
  }
  std::string text;
  *db << "SELECT to_char(prescient.at_us(1795266900000000) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS')",
      soci::into(text);
  CHECK(text == "2026-11-21T13:15:00");
}
