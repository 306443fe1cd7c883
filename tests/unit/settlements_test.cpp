#include <catch2/catch.hpp>

#include "prescient/errors.hpp"
#include "runner/settlements.hpp"
#include "prescient/shard.hpp"
#include "prescient/time_text.hpp"

using namespace prescient;
using namespace prescient::runner;
using namespace std::chrono_literals;


TEST_CASE("shard specs parse I/N and own their slots round-robin") {
  const Shard s = parse_shard("1/2");
  CHECK(s.index == 1);
  CHECK(s.count == 2);
  CHECK(s.text() == "1/2");
  const SlotGrid grid{900s};
  CHECK(s.owns(grid, parse_time("2026-11-21T13:15:00Z")) != s.owns(grid, parse_time("2026-11-21T13:30:00Z")));
  CHECK(parse_shard("0/1").owns(grid, parse_time("2026-11-21T13:30:00Z")));
  for (const char* bad : {"", "1", "2/2", "-1/2", "0/0", "a/b", "0/2x", "1 /2", "0/2000"}) {
    INFO(bad);
    CHECK_THROWS_WITH(parse_shard(bad), Catch::Contains(std::string("'") + bad + "'"));
  }
}

namespace {

using runner::UnitResult;
using runner::WorkUnit;

// A batch of checks due at 13:15 on a 15-minute grid.
struct Batch {
  const SlotGrid grid{900s};
  const TimePoint slot = parse_time("2026-11-21T13:15:00Z");
  std::vector<Check> checks;
  std::vector<WorkUnit> units;
  std::vector<UnitResult> results;
  std::vector<GuardLimits> limits;

  // One unit of `count` checks (a group when count > 1), answering `result`.
  void add(std::size_t count, UnitResult result) {
    units.push_back({.job = "j", .first = checks.size(), .count = count, .grouped = count > 1});
    for (std::size_t k = 0; k < count; ++k) {
      checks.push_back({.id = static_cast<std::int64_t>(checks.size() + 1), .job = "j", .slot = slot,
                        .check_count = 2});
    }
    results.push_back(std::move(result));
    limits.push_back({});
  }
  std::vector<SettleItem> settle() { return runner::settlements_of(checks, units, results, limits); }
};

JobResult answer(std::optional<TimePoint> next, std::vector<Event> events = {}) {
  return {.next = next, .events = std::move(events)};
}

JobResult with_payload_update(nlohmann::json update) { return {.payload_update = std::move(update)}; }

}  // namespace

TEST_CASE("settlements: event ids, sources and times default from the check; an answer goes to the judge as given") {
  Batch b;
  b.add(1, {.ran = true, .results = {answer(std::nullopt, {{.type = "a"}, {.type = "b"}, {.type = "c", .id = "mine"}})}});
  b.add(1, {.ran = true, .results = {answer(parse_time("2026-11-21T13:16:00Z"))}});
  const auto items = b.settle();
  REQUIRE(items.size() == 2);
  REQUIRE(items[0].events.size() == 3);
  CHECK(items[0].events[0].id == "1-3");    // check 1 ran its third time
  CHECK(items[0].events[1].id == "1-3-1");  // the second event of that run
  CHECK(items[0].events[2].id == "mine");
  CHECK(items[0].events[0].source == "1");
  CHECK(items[0].events[0].occurred_at == b.slot);
  CHECK(items[0].events[0].payload == "{}");
  CHECK_FALSE(items[1].answer.failed);
  CHECK(items[1].answer.next == parse_time("2026-11-21T13:16:00Z"));
  CHECK(items[1].check.check_count == 2);  // before the run, as the judge takes it
  CHECK(items[1].check.slot == b.slot);
}

TEST_CASE("settlements: a failed unit fails all its checks; units not reached are not settled") {
  Batch b;
  b.add(3, {.ran = true, .failed = true, .error = "upstream down"});
  b.add(1, {.ran = false});  // past the batch's deadline, or after a timeout: stays due
  const auto items = b.settle();
  REQUIRE(items.size() == 3);
  for (const SettleItem& item : items) {
    CHECK(item.answer.failed);
    CHECK(item.answer.error == "upstream down");
    CHECK(item.check.attempts == 0);
  }
}

TEST_CASE("settlements: what cannot be stored fails its own check, and only it") {
  struct Row {
    const char* label;
    JobResult answer;
    std::vector<BufferedWrite> writes;
    const char* error;  // nullptr: settled as answered
  };
  const Row rows[] = {
      {"a fine event", answer(std::nullopt, {{.type = "ok"}}), {}, nullptr},
      {"an empty type", answer(std::nullopt, {{.type = ""}}), {}, "event 1 has an empty type"},
      {"an id that is not UTF-8", answer(std::nullopt, {{.type = "t", .id = "x\xff"}}), {}, "event 1's id is not valid UTF-8"},
      {"a NUL in the payload", answer(std::nullopt, {{.type = "t", .payload = {{"s", std::string("a\0b", 3)}}}}), {},
       "event 1: a string of the payload contains a NUL byte"},
      {"a time beyond 9999", answer(std::nullopt, {{.type = "t", .occurred_at = from_unix_micros(20000LL * 365 * 86400 * 1000000)}}),
       {}, "outside the years 1 to 9999"},
      {"a write without SQL", answer(std::nullopt), {{.sql = " "}}, "buffered write 1 has no SQL"},
      {"a write with a NUL parameter", answer(std::nullopt), {{.sql = "SELECT $1", .params = {std::string("a\0b", 3)}}},
       "buffered write 1: parameter $1 contains a NUL byte"},
      {"a payload update", with_payload_update({{"state", 2}}), {}, nullptr},
      {"a payload update that is not an object", with_payload_update(nlohmann::json::array({1})), {},
       "the job's payload update is not a JSON object"},
      {"a NUL in the payload update", with_payload_update({{"s", std::string("a\0b", 3)}}), {},
       "the job's payload update: a string of the payload contains a NUL byte"},
      {"invalid UTF-8 in the payload update", with_payload_update({{"s", "x\xff"}}), {}, "not valid UTF-8"},
  };
  for (const Row& row : rows) {
    INFO(row.label);
    Batch b;
    b.add(1, {.ran = true, .results = {answer(std::nullopt)}});  // a good neighbour
    b.add(1, {.ran = true, .results = {row.answer}, .writes = row.writes});
    const auto items = b.settle();
    REQUIRE(items.size() == 2);
    CHECK_FALSE(items[0].answer.failed);
    if (row.error == nullptr) {
      CHECK_FALSE(items[1].answer.failed);
      CHECK(items[1].payload_update ==
            (row.answer.payload_update ? std::optional(row.answer.payload_update->dump()) : std::nullopt));
      continue;
    }
    CHECK_FALSE(items[1].payload_update.has_value());
    CHECK(items[1].answer.failed);
    CHECK_THAT(items[1].answer.error, Catch::Contains(row.error));
    CHECK(items[1].events.empty());
    CHECK(items[1].writes.empty());
  }
}

TEST_CASE("settlements: a group's writes settle with its first check; types and sources are made storable") {
  Batch b;
  b.add(2, {.ran = true,
            .results = {answer(std::nullopt, {{.type = "bad\xff", .source = "s\xfe"}}), answer(std::nullopt)},
            .writes = {{.sql = "SELECT 1"}}});
  const auto items = b.settle();
  REQUIRE(items.size() == 2);
  CHECK(items[0].writes.size() == 1);
  CHECK(items[1].writes.empty());
  CHECK(items[0].events.at(0).type == "bad\xEF\xBF\xBD");
  CHECK(items[0].events.at(0).source == "s\xEF\xBF\xBD");
}

TEST_CASE("tally counts settled checks by what became of them, as the settle statement counted them") {
  SettledCounts counts{.checks = 6, .events = 7, .done = 1, .rescheduled = 1, .retried = 1, .failed = 1, .guarded = 2};
  counts += SettledCounts{.checks = 1, .done = 1};
  SlotReport report;
  tally(counts, report);
  CHECK(report.done == 2);
  CHECK(report.failed == 1);
  CHECK(report.guarded == 2);
  CHECK(report.rescheduled == 1);
  CHECK(report.retried == 1);
  CHECK(report.events == 7);
}
