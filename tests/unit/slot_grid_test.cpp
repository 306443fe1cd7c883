#include <catch2/catch.hpp>

#include <set>

#include "prescient/errors.hpp"
#include "prescient/slot_grid.hpp"
#include "prescient/time_text.hpp"

using namespace prescient;
using std::chrono::seconds;
using namespace std::chrono_literals;

TEST_CASE("round_up moves a time to the next boundary, never earlier") {
  struct Case {
    long long resolution;
    const char* at;
    const char* expected;
  };
  const Case cases[] = {
      // The seeds' example: 10:05 + 3h on a 15 min grid fires at 13:15.
      {900, "2026-11-21T13:05:00Z", "2026-11-21T13:15:00Z"},
      {900, "2026-11-21T13:15:00Z", "2026-11-21T13:15:00Z"},            // on the grid: stays
      {900, "2026-11-21T13:15:00.000001Z", "2026-11-21T13:30:00Z"},     // a microsecond past: next slot
      {900, "2026-11-21T13:14:59.999999Z", "2026-11-21T13:15:00Z"},
      {900, "2026-11-21T23:50:00Z", "2026-11-22T00:00:00Z"},            // across midnight
      {60, "2026-11-21T10:05:30Z", "2026-11-21T10:06:00Z"},
      {1, "2026-11-21T10:05:30.2Z", "2026-11-21T10:05:31Z"},
      {86400, "2024-02-28T12:00:00Z", "2024-02-29T00:00:00Z"},          // leap day
      {86400, "2024-02-29T00:00:00Z", "2024-02-29T00:00:00Z"},
      {3600, "9999-12-31T22:30:00Z", "9999-12-31T23:00:00Z"},           // far future
      {900, "1969-12-31T23:50:00Z", "1970-01-01T00:00:00Z"},            // before the epoch
      {900, "1969-12-31T23:40:00Z", "1969-12-31T23:45:00Z"},
  };
  for (const Case& c : cases) {
    INFO(c.resolution << "s grid, " << c.at);
    const SlotGrid grid{seconds{c.resolution}};
    const TimePoint rounded = grid.round_up(parse_time(c.at));
    CHECK(format_time(rounded) == c.expected);
    CHECK(grid.on_grid(rounded));
    CHECK(rounded >= parse_time(c.at));
  }
}

TEST_CASE("floor gives the slot containing a time") {
  const SlotGrid grid{seconds{900}};
  CHECK(format_time(grid.floor(parse_time("2026-11-21T13:29:59.999999Z"))) == "2026-11-21T13:15:00Z");
  CHECK(format_time(grid.floor(parse_time("2026-11-21T13:30:00Z"))) == "2026-11-21T13:30:00Z");
  CHECK(format_time(grid.floor(parse_time("1969-12-31T23:59:59Z"))) == "1969-12-31T23:45:00Z");
  CHECK_FALSE(grid.on_grid(parse_time("2026-11-21T13:30:01Z")));
}

TEST_CASE("slot index counts slots from the epoch") {
  const SlotGrid grid{seconds{900}};
  CHECK(grid.index(parse_time("1970-01-01T00:00:00Z")) == 0);
  CHECK(grid.index(parse_time("1970-01-01T00:14:59Z")) == 0);
  CHECK(grid.index(parse_time("1970-01-01T00:15:00Z")) == 1);
  CHECK(grid.index(parse_time("1969-12-31T23:59:59Z")) == -1);
  CHECK(grid.index(parse_time("2026-11-21T13:15:00Z")) == 1795266900LL / 900);  // date -u -d 2026-11-21T13:15:00Z +%s
}

TEST_CASE("shards split slots round-robin: one fires :00 and :30, the other :15 and :45") {
  const SlotGrid grid{seconds{900}};
  const char* slots[] = {"2026-11-21T13:00:00Z", "2026-11-21T13:15:00Z", "2026-11-21T13:30:00Z",
                         "2026-11-21T13:45:00Z"};
  CHECK(grid.shard_of(parse_time(slots[0]), 2) == grid.shard_of(parse_time(slots[2]), 2));
  CHECK(grid.shard_of(parse_time(slots[1]), 2) == grid.shard_of(parse_time(slots[3]), 2));
  CHECK(grid.shard_of(parse_time(slots[0]), 2) != grid.shard_of(parse_time(slots[1]), 2));
  CHECK(grid.shard_of(parse_time(slots[0]), 1) == 0);
  CHECK(grid.shard_of(parse_time("1969-12-31T23:45:00Z"), 4) == 3);  // never negative
}

TEST_CASE("a resolution must divide a day, between 1s and 1d") {
  for (const long long ok : {1LL, 2LL, 5LL, 30LL, 60LL, 900LL, 3600LL, 7200LL, 43200LL, 86400LL}) {
    INFO(ok);
    CHECK_NOTHROW(SlotGrid{seconds{ok}});
  }
  for (const long long bad : {0LL, -60LL, 7LL, 420LL, 86401LL, 172800LL}) {
    INFO(bad);
    CHECK_THROWS_AS(SlotGrid{seconds{bad}}, InvalidInput);
  }
  CHECK_THROWS_WITH(SlotGrid{seconds{420}}, Catch::Contains("7m") && Catch::Contains("divide a day"));
}

TEST_CASE("a window spreads ids over its whole slots in turn, as prescient.spread_slot does") {
  const SlotGrid grid(60s);
  struct Row {
    std::int64_t id;
    std::chrono::seconds window, offset;
  };
  for (const Row& row : {Row{1, 10min, 1min}, Row{10, 10min, 0s}, Row{19, 10min, 9min}, Row{7, 3min + 30s, 1min},
                         Row{8, 3min + 59s, 2min}, Row{5, 119s, 0s}, Row{5, 120s, 1min}, Row{5, 0s, 0s},
                         Row{5, -10min, 0s}, Row{1000003, 24h, 1000003 % 1440 * 1min}}) {
    CAPTURE(row.id, row.window.count());
    CHECK(grid.spread_offset(row.id, row.window) == row.offset);
    CHECK(grid.spread_offset(row.id, row.window) < std::max(row.window, 1s));
  }
}

TEST_CASE("a jitter gives each occurrence its own offset in whole slots: stable, within it, never early") {
  const SlotGrid grid(60s);
  const TimePoint nine = prescient::parse_time("2026-11-21T09:00:00Z");
  std::set<std::int64_t> seen;
  for (int day = 0; day < 200; ++day) {
    const TimePoint occurrence = nine + std::chrono::hours{24 * day};
    const auto offset = grid.jitter_offset("digest", occurrence, 10min);
    CHECK(offset >= 0s);
    CHECK(offset < 10min);
    CHECK(offset % 60s == 0s);
    CHECK(grid.jitter_offset("digest", occurrence, 10min) == offset);  // the same each time it is computed
    seen.insert(offset.count());
  }
  CHECK(seen.size() == 10);  // 200 occurrences use all ten slots of the jitter
  CHECK(grid.jitter_offset("digest", nine, 119s) == 0s);  // under two slots: nothing to pick
  // Pinned: a change of the hash would move every schedule's firings after an upgrade.
  CHECK(grid.jitter_offset("digest", nine, 1h) == 14min);
  CHECK(grid.jitter_offset("other", nine, 1h) == 36min);
}
