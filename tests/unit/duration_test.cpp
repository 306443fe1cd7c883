#include <catch2/catch.hpp>

#include "prescient/duration.hpp"
#include "prescient/errors.hpp"

using prescient::format_duration;
using prescient::InvalidInput;
using prescient::parse_duration;
using std::chrono::seconds;

TEST_CASE("durations parse to seconds") {
  struct Case {
    const char* text;
    long long seconds;
  };
  const Case cases[] = {
      {"0s", 0},          {"1s", 1},          {"90s", 90},         {"15m", 900},
      {"1h", 3600},       {"1h30m", 5400},    {"2d", 172800},      {"1d12h", 129600},
      {"1d2h3m4s", 93784}, {"0d0h0m1s", 1},   {"365d", 31536000},  {"36600d", 36600LL * 86400},
      {"007m", 420},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    CHECK(parse_duration(c.text) == seconds{c.seconds});
  }
}

TEST_CASE("bad durations are refused with the text in the message") {
  const char* bad[] = {
      "",        "-5m",     "+5m",   "5",        "m",         "1x",     "1h1h",  "30m1h",
      "1.5h",    " 1h",     "1h ",   "1H",       "36601d",    "99999999999999999999s",
      "1w",      "1h-30m",  "h1",
  };
  for (const char* text : bad) {
    INFO(text);
    try {
      parse_duration(text);
      FAIL("accepted " << text);
    } catch (const InvalidInput& e) {
      CHECK_THAT(e.what(), Catch::Contains(std::string("'") + text + "'"));
    }
  }
}

TEST_CASE("negative durations say why") {
  CHECK_THROWS_WITH(parse_duration("-5m"), Catch::Contains("negative"));
  CHECK_THROWS_WITH(parse_duration("1h1h"), Catch::Contains("repeated or out of order"));
  CHECK_THROWS_WITH(parse_duration("36601d"), Catch::Contains("100 years"));
}

TEST_CASE("durations format to their shortest form and read back") {
  struct Case {
    long long seconds;
    const char* text;
  };
  const Case cases[] = {{0, "0s"}, {1, "1s"}, {60, "1m"}, {5400, "1h30m"}, {86400, "1d"}, {93784, "1d2h3m4s"},
                        {31536000, "365d"}};
  for (const Case& c : cases) {
    INFO(c.text);
    CHECK(format_duration(seconds{c.seconds}) == c.text);
    CHECK(parse_duration(format_duration(seconds{c.seconds})) == seconds{c.seconds});
  }
}
