#include <catch2/catch.hpp>

#include "prescient/errors.hpp"
#include "prescient/time_text.hpp"

using namespace prescient;

TEST_CASE("ISO-8601 times and unix seconds parse to UTC microseconds") {
  struct Case {
    const char* text;
    long long micros;
  };
  const Case cases[] = {
      {"1970-01-01T00:00:00Z", 0},
      {"@0", 0},
      {"@1763719500", 1763719500LL * 1000000},
      {"2025-11-21T10:05:00Z", 1763719500LL * 1000000},
      {"2025-11-21T10:05Z", 1763719500LL * 1000000},
      {"2025-11-21 10:05:00Z", 1763719500LL * 1000000},
      {"2025-11-21t10:05:00z", 1763719500LL * 1000000},
      {"2025-11-21T11:05:00+01:00", 1763719500LL * 1000000},
      {"2025-11-21T11:05:00+0100", 1763719500LL * 1000000},
      {"2025-11-21T11:05:00+01", 1763719500LL * 1000000},
      {"2025-11-21T05:05:00-05:00", 1763719500LL * 1000000},
      {"2025-11-21T15:50:00+05:45", 1763719500LL * 1000000},
      {"2025-11-21T10:05:00.5Z", 1763719500LL * 1000000 + 500000},
      {"2025-11-21T10:05:00,25Z", 1763719500LL * 1000000 + 250000},
      {"2025-11-21T10:05:00.123456Z", 1763719500LL * 1000000 + 123456},
      // Finer than a microsecond rounds up: a time never moves earlier than asked.
      {"2025-11-21T10:05:00.0000001Z", 1763719500LL * 1000000 + 1},
      {"2025-11-21T10:05:00.999999999Z", 1763719501LL * 1000000},
      // Leap days.
      {"2024-02-29T00:00:00Z", 1709164800LL * 1000000},
      {"2000-02-29T12:00:00Z", 951825600LL * 1000000},
      // Far future and the day boundary across an offset.
      {"9999-12-31T23:59:59Z", 253402300799LL * 1000000},
      {"2026-01-01T00:30:00+01:00", 1767223800LL * 1000000},
      // Before the epoch.
      {"1969-12-31T23:59:59Z", -1000000},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    CHECK(to_unix_micros(parse_time(c.text)) == c.micros);
  }
}

TEST_CASE("bad times are refused with the text in the message") {
  const char* bad[] = {
      "",
      "now",
      "2025-11-21",                  // no time of day
      "2025-11-21T10:05:00",         // no offset: ambiguous local time
      "2025-02-29T00:00:00Z",        // not a leap year
      "1900-02-29T00:00:00Z",        // century, not a leap year
      "2025-13-01T00:00:00Z",
      "2025-04-31T00:00:00Z",
      "2025-11-21T24:00:00Z",
      "2025-11-21T10:60:00Z",
      "2025-11-21T10:05:60Z",        // leap seconds are not representable
      "2025-11-21T10:05:00+15:00",
      "2025-11-21T10:05:00+01:0",
      "2025-11-21T10:05:00.Z",
      "2025-11-21T10:05:00.1234567890Z",
      "2025-11-21T10:05:00Z junk",
      "25-11-21T10:05:00Z",
      "2025/11/21T10:05:00Z",
      "@",
      "@-5",
      "@12.5",
      "@253402300800",
      "@99999999999999999999",
  };
  for (const char* text : bad) {
    INFO(text);
    try {
      parse_time(text);
      FAIL("accepted " << text);
    } catch (const InvalidInput& e) {
      CHECK_THAT(e.what(), Catch::Contains(std::string("'") + text + "'"));
    }
  }
}

TEST_CASE("times format as ISO-8601 UTC with Z and read back") {
  struct Case {
    long long micros;
    const char* text;
  };
  const Case cases[] = {
      {0, "1970-01-01T00:00:00Z"},
      {1763719500LL * 1000000, "2025-11-21T10:05:00Z"},
      {1763719500LL * 1000000 + 500000, "2025-11-21T10:05:00.5Z"},
      {1763719500LL * 1000000 + 123456, "2025-11-21T10:05:00.123456Z"},
      {1763719500LL * 1000000 + 1, "2025-11-21T10:05:00.000001Z"},
      {-1, "1969-12-31T23:59:59.999999Z"},
      {253402300799LL * 1000000, "9999-12-31T23:59:59Z"},
      {-62135596800LL * 1000000, "0001-01-01T00:00:00Z"},
      {951782400LL * 1000000 + 10, "2000-02-29T00:00:00.00001Z"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    CHECK(format_time(from_unix_micros(c.micros)) == c.text);
    CHECK(to_unix_micros(parse_time(format_time(from_unix_micros(c.micros)))) == c.micros);
  }
}
