// Business time, prescient.calendar_set and the arithmetic of open time (sql/functions/086_business_time.sql):
// bad input refused in one line naming the value, with nothing written; the rule's cases a person can check
// by hand, DST changes included. The random cases against a reference are tests/business_time/oracle.py's.
#include <catch2/catch.hpp>
#include <soci/postgresql/soci-postgresql.h>
#include <soci/soci.h>

#include <string>
#include <vector>

#include "test_database.hpp"

using prescient::testing::connect_to;
using prescient::testing::create_migrated_database;

namespace {

struct BusinessTimeFixture {
  std::unique_ptr<soci::session> db = connect_to(create_migrated_database());

  // The SQLSTATE and message of a statement that must fail; "" when it succeeded.
  std::string refusal(const std::string& sql) {
    try {
      *db << "SAVEPOINT refusal";
      *db << sql;
      *db << "RELEASE SAVEPOINT refusal";
      return "";
    } catch (const soci::postgresql_soci_error& e) {
      *db << "ROLLBACK TO SAVEPOINT refusal";
      return e.sqlstate() + " " + e.what();
    }
  }
  std::string text(const std::string& sql) {
    std::string out;
    *db << sql, soci::into(out);
    return out;
  }
  long long calendars() {
    long long n = 0;
    *db << "SELECT (SELECT count(*) FROM prescient.calendar) + (SELECT count(*) FROM prescient.calendar_span)", soci::into(n);
    return n;
  }
};

const std::string kOffice = R"({"hours": {"mon": ["09:00-17:00"], "tue": ["09:00-17:00"], "wed": ["09:00-17:00"],)"
                            R"( "thu": ["09:00-17:00"], "fri": ["09:00-17:00"]}, "holidays": ["12-25", "2026-12-31"],)"
                            R"( "days": [{"date": "12-24", "hours": ["09:00-12:00"]}]})";

}  // namespace

TEST_CASE_METHOD(BusinessTimeFixture, "business time: bad input is refused in one line naming the value, nothing written") {
  *db << "BEGIN";
  struct Case {
    std::string name, zone, definition, says;
  };
  const std::vector<Case> cases = {
      {"never", "Europe/Berlin", R"({"hours": {}})", "is never open"},
      {"zone", "Europe/Nowhere", R"({"hours": {"mon": ["09:00-17:00"]}})", "time zone 'Europe/Nowhere' does not exist"},
      {"overlap", "Europe/Berlin", R"({"hours": {"mon": ["09:00-13:00", "12:00-17:00"]}})",
       "hours.mon 09:00-13:00 overlaps hours.mon 12:00-17:00"},
      {"night", "Europe/Berlin", R"({"hours": {"sun": ["22:00-06:00"], "mon": ["05:00-09:00"]}})",
       "hours.mon 05:00-09:00 overlaps hours.sun 22:00-06:00"},
      {"interval", "Europe/Berlin", R"({"hours": {"mon": ["9-17"]}})", "hours.mon holds \"9-17\", not an interval"},
      {"empty", "Europe/Berlin", R"({"hours": {"mon": ["09:00-09:00"]}})", "not an interval HH:MM-HH:MM"},
      {"noday", "Europe/Berlin", R"({"hours": {"mon": ["09:00-17:00"]}, "holidays": ["02-30"]})", "holiday \"02-30\" names no day"},
      {"fifth", "Europe/Berlin", R"({"hours": {"mon": ["09:00-17:00"]}, "holidays": ["fifth mon of may"]})",
       "holiday \"fifth mon of may\" names no day"},
      {"weekday", "Europe/Berlin", R"({"hours": {"monday": ["09:00-17:00"]}})", "hours has 'monday', not a weekday"},
      {"key", "Europe/Berlin", R"({"hours": {"mon": ["09:00-17:00"]}, "closures": []})", "unknown key 'closures'"},
      {"a<b>", "Europe/Berlin", R"({"hours": {"mon": ["09:00-17:00"]}})", "calendar 'a<b>' holds '<'"},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    const std::string said = refusal("SELECT prescient.calendar_set('" + c.name + "', '" + c.zone + "', '" + c.definition + "')");
    CHECK_THAT(said, Catch::StartsWith("PR400") && Catch::Contains(c.says));
  }
  CHECK(calendars() == 0);
  // The arithmetic's own refusals: an unknown calendar, lengths that are not lengths of open time.
  *db << "SELECT prescient.calendar_set('office', 'Europe/Berlin', '" + kOffice + "')";
  CHECK_THAT(refusal("SELECT prescient.business_add('nowhere', now(), '4h')"),
             Catch::StartsWith("PR404") && Catch::Contains("no calendar named 'nowhere'"));
  CHECK_THAT(refusal("SELECT prescient.business_add('office', now(), '-4h')"),
             Catch::StartsWith("PR400") && Catch::Contains("business time -04:00:00"));
  CHECK_THAT(refusal("SELECT prescient.business_add('office', now(), '1 day')"),
             Catch::StartsWith("PR400") && Catch::Contains("24h, not 1 day"));
  CHECK_THAT(refusal("SELECT prescient.business_add_days('office', now(), 0)"),
             Catch::StartsWith("PR400") && Catch::Contains("business days 0: give 1 or more"));
  CHECK_THAT(refusal("SELECT prescient.business_add('office', '2150-01-01', '4h')"),
             Catch::StartsWith("PR400") && Catch::Contains("outside calendar 'office''s range"));
  *db << "ROLLBACK";
}

TEST_CASE_METHOD(BusinessTimeFixture, "business time: hours, days and the open time between, by hand") {
  *db << "SELECT prescient.calendar_set('office', 'Europe/Berlin', '" + kOffice + "')";
  const auto at = [&](const std::string& expression) {
    return text("SELECT to_char((" + expression + ") AT TIME ZONE 'Europe/Berlin', 'YYYY-MM-DD HH24:MI')");
  };
  // Friday 15:00 + 4h of open time: 2 h on Friday, 2 h on Monday.
  CHECK(at("prescient.business_add('office', '2026-11-27 15:00 Europe/Berlin', '4h')") == "2026-11-30 11:00");
  // Ending at a closing time returns the closing time.
  CHECK(at("prescient.business_add('office', '2026-11-27 15:00 Europe/Berlin', '2h')") == "2026-11-27 17:00");
  // From closed time, counting starts at the next opening.
  CHECK(at("prescient.business_add('office', '2026-11-28 12:00 Europe/Berlin', '1h')") == "2026-11-30 10:00");
  // The half day before Christmas, the holiday, and New Year's Eve closed.
  CHECK(at("prescient.business_add('office', '2026-12-24 11:00 Europe/Berlin', '2h')") == "2026-12-28 10:00");
  CHECK(at("prescient.business_add('office', '2026-12-30 16:00 Europe/Berlin', '2h')") == "2027-01-01 10:00");
  // Business days: the same time of day, that many open days later; at a closing time, that closing time.
  CHECK(at("prescient.business_add_days('office', '2026-11-27 10:30 Europe/Berlin', 3)") == "2026-12-02 10:30");
  CHECK(at("prescient.business_add_days('office', '2026-11-27 17:00 Europe/Berlin', 1)") == "2026-11-30 17:00");
  CHECK(at("prescient.business_add_days('office', '2026-11-27 20:00 Europe/Berlin', 1)") == "2026-12-01 09:00");
  CHECK(text("SELECT prescient.business_between('office', '2026-11-27 15:00 Europe/Berlin', "
             "'2026-11-30 11:00 Europe/Berlin')::text") == "04:00:00");
  CHECK(text("SELECT prescient.business_between('office', '2026-11-30 11:00 Europe/Berlin', "
             "'2026-11-27 15:00 Europe/Berlin')::text") == "-04:00:00");
}

TEST_CASE_METHOD(BusinessTimeFixture, "business time: a DST gap is not open time, a repeated hour counts once") {
  // Open 01:00 to 05:00 every day in Berlin: 4 hours of wall time; on 2026-03-29 02:00-03:00 does not exist
  // (3 hours open), on 2026-10-25 02:00-03:00 happens twice (4 hours open, the first pass only).
  *db << R"(SELECT prescient.calendar_set('night', 'Europe/Berlin', '{"hours": {"mon": ["01:00-05:00"], "tue": ["01:00-05:00"],)"
         R"( "wed": ["01:00-05:00"], "thu": ["01:00-05:00"], "fri": ["01:00-05:00"], "sat": ["01:00-05:00"], "sun": ["01:00-05:00"]}}'))";
  const auto between = [&](const std::string& day) {
    return text("SELECT prescient.business_between('night', '" + day + " 00:00 Europe/Berlin', '" + day +
                " 12:00 Europe/Berlin')::text");
  };
  CHECK(between("2026-03-28") == "04:00:00");
  CHECK(between("2026-03-29") == "03:00:00");
  CHECK(between("2026-10-25") == "04:00:00");
  // 1h30 after 01:30 on the day of the gap: 02:00 to 03:00 is skipped, so 04:00 CEST.
  CHECK(text("SELECT prescient.iso(prescient.business_add('night', '2026-03-29 01:30 Europe/Berlin', '1h30m'))") ==
        "2026-03-29T02:00:00Z");
  // On the day the clock goes back, 02:30 is reached once: the first time (CEST, 00:30 UTC); the second
  // pass of 02:00-03:00 is not open.
  CHECK(text("SELECT prescient.iso(prescient.business_add('night', '2026-10-25 01:00 Europe/Berlin', '1h30m'))") ==
        "2026-10-25T00:30:00Z");
  CHECK(text("SELECT prescient.iso(prescient.business_add('night', '2026-10-25 01:00 Europe/Berlin', '3h'))") ==
        "2026-10-25T03:00:00Z");
}
