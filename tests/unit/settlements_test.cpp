#include <catch2/catch.hpp>

#include "prescient/errors.hpp"
#include "runner/settlements.hpp"
#include "prescient/shard.hpp"
#include "prescient/time_text.hpp"

using namespace prescient;
using namespace prescient::runner;
using namespace std::chrono_literals;
using Kind = Settlement::Kind;

namespace {

RunOutcome next_at(const char* text) { return {.next = parse_time(text)}; }
RunOutcome done() { return {}; }
RunOutcome failure(const char* why) { return {.failed = true, .error = why}; }

// A check run at `slot`, asked for at that time unless said otherwise, with its counts before the run.
Check run_at(TimePoint slot, int check_count = 0, int attempts = 0, std::optional<TimePoint> asked_for = std::nullopt) {
  Check c;
  c.id = 7;
  c.job = "reminder";
  c.slot = slot;
  c.asked_for = asked_for.value_or(slot);
  c.check_count = check_count;
  c.attempts = attempts;
  return c;
}

}  // namespace

TEST_CASE("guards judge what a job answered for a check run at slot S") {
  const SlotGrid grid{900s};
  const TimePoint slot = parse_time("2026-11-21T13:15:00Z");
  const GuardLimits limits{.max_checks = 5, .max_attempts = 5, .max_horizon = 365 * 24h};
  struct Case {
    const char* label;
    RunOutcome run;
    int check_count, attempts;
    Kind kind;
    std::optional<Outcome> outcome;  // finish only
    const char* next;  // for reschedule and retry
    int count_after, attempts_after;
  };
  const Case cases[] = {
      {"nothing: done", done(), 0, 0, Kind::finish, Outcome::done, nullptr, 1, 0},
      {"a later time: rescheduled, rounded up", next_at("2026-11-21T15:05:00Z"), 0, 0, Kind::reschedule, std::nullopt,
       "2026-11-21T15:15:00Z", 1, 0},
      {"the next slot exactly", next_at("2026-11-21T13:30:00Z"), 1, 0, Kind::reschedule, std::nullopt, "2026-11-21T13:30:00Z",
       2, 0},
      {"a microsecond after S: the next slot", next_at("2026-11-21T13:15:00.000001Z"), 0, 0, Kind::reschedule, std::nullopt,
       "2026-11-21T13:30:00Z", 1, 0},
      {"success resets attempts", next_at("2026-11-21T14:00:00Z"), 0, 3, Kind::reschedule, std::nullopt, "2026-11-21T14:00:00Z",
       1, 0},
      {"fifth run asks for more: guard_max_checks", next_at("2026-11-21T14:00:00Z"), 4, 0, Kind::finish,
       Outcome::guard_max_checks, nullptr, 5, 0},
      {"fifth run says done: done", done(), 4, 0, Kind::finish, Outcome::done, nullptr, 5, 0},
      {"S itself: guard_past", next_at("2026-11-21T13:15:00Z"), 0, 0, Kind::finish, Outcome::guard_past, nullptr, 1, 0},
      {"before S: guard_past", next_at("2026-11-21T09:00:00Z"), 0, 0, Kind::finish, Outcome::guard_past, nullptr, 1, 0},
      {"beyond the horizon: guard_horizon", next_at("2027-11-21T13:15:00.000001Z"), 0, 0, Kind::finish,
       Outcome::guard_horizon, nullptr, 1, 0},
      {"at the horizon: rescheduled", next_at("2027-11-21T13:15:00Z"), 0, 0, Kind::reschedule, std::nullopt,
       "2027-11-21T13:15:00Z", 1, 0},
      {"first failure: retry one slot later", failure("boom"), 2, 0, Kind::retry, std::nullopt, "2026-11-21T13:30:00Z", 2, 1},
      {"second failure: two slots later", failure("boom"), 2, 1, Kind::retry, std::nullopt, "2026-11-21T13:45:00Z", 2, 2},
      {"fourth failure: eight slots later", failure("boom"), 2, 3, Kind::retry, std::nullopt, "2026-11-21T15:15:00Z", 2, 4},
      {"fifth failure: failed", failure("boom"), 2, 4, Kind::finish, Outcome::failed, nullptr, 2, 5},
  };
  for (const Case& c : cases) {
    INFO(c.label);
    const Settlement s = judge(c.run, run_at(slot, c.check_count, c.attempts), limits, grid);
    CHECK(s.kind == c.kind);
    if (c.outcome) CHECK(s.outcome == *c.outcome);
    if (c.next != nullptr) CHECK(format_time(s.next_check_at) == c.next);
    CHECK(s.check_count == c.count_after);
    CHECK(s.attempts == c.attempts_after);
    if (c.run.failed) CHECK(s.last_error == "boom");
    // A guard says why; nothing else leaves an error.
    const bool guarded = s.kind == Kind::finish && s.outcome != Outcome::done && s.outcome != Outcome::failed;
    CHECK((guarded || c.run.failed) == s.last_error.has_value());
    // A reschedule's answer is the check's new asked-for time.
    CHECK(s.asked_for == (s.kind == Kind::reschedule ? c.run.next : std::nullopt));
  }
}

TEST_CASE("retry backoff is capped at a day and stays on the grid") {
  const SlotGrid grid{60s};
  const TimePoint slot = parse_time("2026-11-21T13:00:00Z");
  const GuardLimits many{.max_checks = 5, .max_attempts = 1000};
  const Settlement s = judge(failure("x"), run_at(slot, 0, 40), many, grid);
  CHECK(s.kind == Kind::retry);
  CHECK(format_time(s.next_check_at) == "2026-11-22T13:00:00Z");
  const SlotGrid daily{86400s};
  CHECK(format_time(judge(failure("x"), run_at(parse_time("2026-11-21T00:00:00Z")), many, daily).next_check_at) ==
        "2026-11-22T00:00:00Z");
}

TEST_CASE("a policy's limits apply: max_checks 1 stops any reschedule") {
  const SlotGrid grid{60s};
  const TimePoint slot = parse_time("2026-11-21T13:00:00Z");
  const Settlement guarded = judge(next_at("2026-11-21T14:00:00Z"), run_at(slot), {.max_checks = 1}, grid);
  CHECK(guarded.outcome == Outcome::guard_max_checks);
  CHECK(guarded.last_error ==
        "asked to look again at 2026-11-21T14:00:00Z after run 1: max_checks is 1 (prescient jobs set reminder "
        "--max-checks N|unlimited)");
  CHECK(judge(failure("x"), run_at(slot), {.max_attempts = 1}, grid).outcome == Outcome::failed);
}

TEST_CASE("max_checks 0 is no limit: the thousandth run may ask again, and the horizon still guards") {
  const SlotGrid grid{60s};
  const TimePoint slot = parse_time("2026-11-21T13:00:00Z");
  const GuardLimits unlimited{.max_checks = 0, .max_horizon = 24h};
  CHECK(judge(next_at("2026-11-22T13:00:00Z"), run_at(slot, 999), unlimited, grid).kind == Kind::reschedule);
  const Settlement far = judge(next_at("2026-11-22T13:00:01Z"), run_at(slot, 999), unlimited, grid);
  CHECK(far.outcome == Outcome::guard_horizon);
  CHECK(far.last_error ==
        "answered 2026-11-22T13:00:01Z, beyond the horizon: at most 1d after the slot 2026-11-21T13:00:00Z");
}

TEST_CASE("an answer in the past is late, not dead: only one at or before the asked-for time is guard_past") {
  const SlotGrid grid{900s};
  // Asked for at 10:00 (+3 h of an order placed at 07:00); the receiver was down, a retry ran at 14:15.
  const TimePoint slot = parse_time("2026-11-21T14:15:00Z");
  const Check retried = run_at(slot, 0, 2, parse_time("2026-11-21T10:00:00Z"));
  // It answers placed + 6 h = 13:00: past, but after what it was asked for: rescheduled (the runner then
  // clamps it to the next boundary from now), and 13:00 is what it is asked for from now on.
  const Settlement late = judge(next_at("2026-11-21T13:00:00Z"), retried, {}, grid);
  CHECK(late.kind == Kind::reschedule);
  CHECK(format_time(late.next_check_at) == "2026-11-21T13:00:00Z");
  CHECK(late.asked_for == parse_time("2026-11-21T13:00:00Z"));
  CHECK_FALSE(late.last_error);
  // A microsecond after the asked-for time still advances.
  CHECK(judge(next_at("2026-11-21T10:00:00.000001Z"), retried, {}, grid).kind == Kind::reschedule);
  // The asked-for time itself, or earlier, does not: guard_past, naming both times.
  for (const char* at : {"2026-11-21T10:00:00Z", "2026-11-21T09:00:00Z"}) {
    INFO(at);
    const Settlement loop = judge(next_at(at), retried, {}, grid);
    CHECK(loop.outcome == Outcome::guard_past);
    CHECK(loop.last_error == std::string("answered ") + at +
                                 ", not after the time this run was asked for (2026-11-21T10:00:00Z): a next time "
                                 "must advance");
  }
}

TEST_CASE("a policy's backoff is absolute time, doubling to its ceiling, each rounded up to the grid") {
  const TimePoint slot = parse_time("2026-11-21T13:00:00Z");
  const GuardLimits minute_doubling{.max_attempts = 10, .backoff = 60s, .backoff_max = 600s};
  const SlotGrid seconds{1s};
  const char* expected[] = {"2026-11-21T13:01:00Z", "2026-11-21T13:02:00Z", "2026-11-21T13:04:00Z",
                            "2026-11-21T13:08:00Z", "2026-11-21T13:10:00Z"};  // capped at 10 minutes
  for (int attempts = 0; attempts < 5; ++attempts) {
    INFO(attempts);
    CHECK(format_time(judge(failure("down"), run_at(slot, 0, attempts), minute_doubling, seconds).next_check_at) ==
          expected[attempts]);
  }
  // On a 15-minute grid, the first boundary after each wait.
  const SlotGrid quarters{900s};
  CHECK(format_time(judge(failure("down"), run_at(slot, 0, 0), minute_doubling, quarters).next_check_at) ==
        "2026-11-21T13:15:00Z");
  CHECK(format_time(judge(failure("down"), run_at(slot, 0, 4), minute_doubling, quarters).next_check_at) ==
        "2026-11-21T13:15:00Z");
  // Without a backoff: one slot, doubling (today's rule).
  CHECK(format_time(judge(failure("down"), run_at(slot, 0, 2), {.max_attempts = 10}, quarters).next_check_at) ==
        "2026-11-21T14:00:00Z");
}

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

using runner::Judging;
using runner::UnitResult;
using runner::WorkUnit;

// A batch of checks due at 13:15 on a 15-minute grid, judged at 13:20 (a late run: never back before 13:30).
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
  std::vector<SettleItem> settle() {
    return runner::settlements_of(checks, units, results, limits,
                                  Judging{.grid = grid, .earliest = parse_time("2026-11-21T13:30:00Z")});
  }
};

JobResult answer(std::optional<TimePoint> next, std::vector<Event> events = {}) {
  return {.next = next, .events = std::move(events)};
}

JobResult with_payload_update(nlohmann::json update) { return {.payload_update = std::move(update)}; }

}  // namespace

TEST_CASE("settlements: event ids, sources and times default from the check; a late reschedule is clamped") {
  Batch b;
  b.add(1, {.ran = true, .results = {answer(std::nullopt, {{.type = "a"}, {.type = "b"}, {.type = "c", .id = "mine"}})}});
  b.add(1, {.ran = true, .results = {answer(parse_time("2026-11-21T13:16:00Z"))}});  // before 13:30: clamped
  const auto items = b.settle();
  REQUIRE(items.size() == 2);
  REQUIRE(items[0].events.size() == 3);
  CHECK(items[0].events[0].id == "1-3");    // check 1 ran its third time
  CHECK(items[0].events[1].id == "1-3-1");  // the second event of that run
  CHECK(items[0].events[2].id == "mine");
  CHECK(items[0].events[0].source == "1");
  CHECK(items[0].events[0].occurred_at == b.slot);
  CHECK(items[0].events[0].payload == "{}");
  CHECK(items[1].settlement.kind == Kind::reschedule);
  CHECK(format_time(items[1].settlement.next_check_at) == "2026-11-21T13:30:00Z");
}

TEST_CASE("settlements: a failed unit fails all its checks; units not reached are not settled") {
  Batch b;
  b.add(3, {.ran = true, .failed = true, .error = "upstream down"});
  b.add(1, {.ran = false});  // past the batch's deadline, or after a timeout: stays due
  const auto items = b.settle();
  REQUIRE(items.size() == 3);
  for (const SettleItem& item : items) {
    CHECK(item.settlement.kind == Kind::retry);
    CHECK(item.settlement.last_error == "upstream down");
    CHECK(item.settlement.attempts == 1);
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
    CHECK(items[0].settlement.outcome == Outcome::done);
    if (row.error == nullptr) {
      CHECK(items[1].settlement.outcome == Outcome::done);
      CHECK(items[1].payload_update ==
            (row.answer.payload_update ? std::optional(row.answer.payload_update->dump()) : std::nullopt));
      continue;
    }
    CHECK_FALSE(items[1].payload_update.has_value());
    CHECK(items[1].settlement.kind == Kind::retry);
    CHECK_THAT(items[1].settlement.last_error.value_or(""), Catch::Contains(row.error));
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

TEST_CASE("tally counts settled checks by what became of them") {
  std::vector<SettleItem> items(6);
  items[0].settlement = {.kind = Kind::finish, .outcome = Outcome::done};
  items[1].settlement = {.kind = Kind::finish, .outcome = Outcome::failed};
  items[2].settlement = {.kind = Kind::finish, .outcome = Outcome::guard_past};
  items[3].settlement = {.kind = Kind::finish, .outcome = Outcome::guard_horizon};
  items[4].settlement = {.kind = Kind::reschedule};
  items[5].settlement = {.kind = Kind::retry};
  SlotReport report;
  tally(items, 7, report);
  CHECK(report.done == 1);
  CHECK(report.failed == 1);
  CHECK(report.guarded == 2);
  CHECK(report.rescheduled == 1);
  CHECK(report.retried == 1);
  CHECK(report.events == 7);
}
