#include <catch2/catch.hpp>

#include "prescient/errors.hpp"
#include "runner/settlements.hpp"
#include "prescient/shard.hpp"
#include "prescient/time_text.hpp"

using namespace prescient;
using namespace std::chrono_literals;
using Kind = Settlement::Kind;

namespace {

RunOutcome next_at(const char* text) { return {.next = parse_time(text)}; }
RunOutcome done() { return {}; }
RunOutcome failure(const char* why) { return {.failed = true, .error = why}; }

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
    const Settlement s = judge(c.run, slot, c.check_count, c.attempts, limits, grid);
    CHECK(s.kind == c.kind);
    if (c.outcome) CHECK(s.outcome == *c.outcome);
    if (c.next != nullptr) CHECK(format_time(s.next_check_at) == c.next);
    CHECK(s.check_count == c.count_after);
    CHECK(s.attempts == c.attempts_after);
    CHECK(s.last_error == (c.run.failed ? std::optional<std::string>("boom") : std::nullopt));
  }
}

TEST_CASE("retry backoff is capped at a day and stays on the grid") {
  const SlotGrid grid{60s};
  const TimePoint slot = parse_time("2026-11-21T13:00:00Z");
  const GuardLimits many{.max_checks = 5, .max_attempts = 1000};
  const Settlement s = judge(failure("x"), slot, 0, 40, many, grid);
  CHECK(s.kind == Kind::retry);
  CHECK(format_time(s.next_check_at) == "2026-11-22T13:00:00Z");
  const SlotGrid daily{86400s};
  CHECK(format_time(judge(failure("x"), parse_time("2026-11-21T00:00:00Z"), 0, 0, many, daily).next_check_at) ==
        "2026-11-22T00:00:00Z");
}

TEST_CASE("a policy's limits apply: max_checks 1 stops any reschedule") {
  const SlotGrid grid{60s};
  const TimePoint slot = parse_time("2026-11-21T13:00:00Z");
  CHECK(judge(next_at("2026-11-21T14:00:00Z"), slot, 0, 0, {.max_checks = 1}, grid).outcome == Outcome::guard_max_checks);
  CHECK(judge(failure("x"), slot, 0, 0, {.max_attempts = 1}, grid).outcome == Outcome::failed);
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
