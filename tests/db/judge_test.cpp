// The settlement's rules, prescient.judge (sql/functions/069_judge.sql): what becomes of a check after a run,
// from what it answered. The runner's settle statement and the worker protocol both call it, so these cases
// hold for both (the conformance suite, jobs/workers/conformance, compares the two end to end).
#include <catch2/catch.hpp>
#include <soci/soci.h>

#include <memory>
#include <optional>
#include <string>

#include "explained_session.hpp"
#include "test_database.hpp"

using prescient::testing::connect_to;
using prescient::testing::create_migrated_database;
using prescient::testing::ExplainedSession;

namespace {

// One run to judge: the answer (a time, NULL for done) or a failure; the check as it ran; its limits.
struct Run {
  std::optional<std::string> answer;
  std::optional<std::string> error;  // set: the run failed
  std::string slot;
  std::optional<std::string> asked_for;  // default: the slot
  int check_count = 0, attempts = 0;
  std::optional<int> own_max_checks, own_max_attempts, own_backoff, own_backoff_max;
  int max_checks = 5, max_attempts = 5;
  std::optional<int> backoff, backoff_max;
  long long horizon = 365LL * 86400;
  int slot_seconds = 900;
  std::optional<std::string> now;  // default: the slot
};

struct Judged {
  std::string kind;
  std::string outcome;     // "" unless finished
  std::string next;        // "" when finished
  std::string asked_for;   // a reschedule's new asked-for time, else ""
  int check_count = 0, attempts = 0;
  std::optional<std::string> last_error;
};

std::string literal(const std::optional<std::string>& text) { return text ? "'" + *text + "'" : "NULL"; }
std::string literal(const std::optional<int>& n) { return n ? std::to_string(*n) : "NULL"; }

Judged judge(soci::session& db, const Run& r) {
  const std::string sql =
      "SELECT kind, coalesce(outcome, ''), coalesce(prescient.iso(next_check_at), ''),"
      " coalesce(prescient.iso(asked_for_at), ''), check_count, attempts, last_error"
      " FROM prescient.judge(ROW(" +
      std::string(r.error ? "true" : "false") + ", " + literal(r.error) + ", " + literal(r.answer) + "::timestamptz, " +
      "'reminder', '" + r.slot + "', " + literal(r.asked_for.value_or(r.slot)) + "::timestamptz, " +
      std::to_string(r.check_count) + ", " + std::to_string(r.attempts) + ")::prescient.judged_run, ROW(" +
      literal(r.own_max_checks) + ", " + literal(r.own_max_attempts) + ", " + literal(r.own_backoff) + ", " +
      literal(r.own_backoff_max) + ")::prescient.check_limits, ROW(" + std::to_string(r.max_checks) + ", " +
      std::to_string(r.max_attempts) + ", " + literal(r.backoff) + ", " + literal(r.backoff_max) +
      ")::prescient.check_limits, " + std::to_string(r.horizon) + " * interval '1 second', " +
      std::to_string(r.slot_seconds) + ", " + literal(r.now.value_or(r.slot)) + "::timestamptz)";
  Judged j;
  std::string last_error;
  soci::indicator error_set = soci::i_null;
  db << sql, soci::into(j.kind), soci::into(j.outcome), soci::into(j.next), soci::into(j.asked_for),
      soci::into(j.check_count), soci::into(j.attempts), soci::into(last_error, error_set);
  if (error_set == soci::i_ok) j.last_error = last_error;
  return j;
}

struct JudgeFixture {
  std::unique_ptr<soci::session> db = connect_to(create_migrated_database());
};

}  // namespace

TEST_CASE_METHOD(JudgeFixture, "judge: what a job answered for a check run at slot S") {
  const std::string slot = "2026-11-21T13:15:00Z";
  struct Case {
    const char* label;
    std::optional<std::string> answer, error;
    int check_count, attempts;
    const char* kind;
    const char* outcome;
    const char* next;
    int count_after, attempts_after;
  };
  const Case cases[] = {
      {"nothing: done", {}, {}, 0, 0, "finish", "done", "", 1, 0},
      {"a later time: rescheduled, rounded up", "2026-11-21T15:05:00Z", {}, 0, 0, "reschedule", "",
       "2026-11-21T15:15:00Z", 1, 0},
      {"the next slot exactly", "2026-11-21T13:30:00Z", {}, 1, 0, "reschedule", "", "2026-11-21T13:30:00Z", 2, 0},
      {"a microsecond after S: the next slot", "2026-11-21T13:15:00.000001Z", {}, 0, 0, "reschedule", "",
       "2026-11-21T13:30:00Z", 1, 0},
      {"success resets attempts", "2026-11-21T14:00:00Z", {}, 0, 3, "reschedule", "", "2026-11-21T14:00:00Z", 1, 0},
      {"fifth run asks for more: guard_max_checks", "2026-11-21T14:00:00Z", {}, 4, 0, "finish", "guard_max_checks", "",
       5, 0},
      {"fifth run says done: done", {}, {}, 4, 0, "finish", "done", "", 5, 0},
      {"S itself: guard_past", "2026-11-21T13:15:00Z", {}, 0, 0, "finish", "guard_past", "", 1, 0},
      {"before S: guard_past", "2026-11-21T09:00:00Z", {}, 0, 0, "finish", "guard_past", "", 1, 0},
      {"beyond the horizon: guard_horizon", "2027-11-21T13:15:00.000001Z", {}, 0, 0, "finish", "guard_horizon", "", 1,
       0},
      {"at the horizon: rescheduled", "2027-11-21T13:15:00Z", {}, 0, 0, "reschedule", "", "2027-11-21T13:15:00Z", 1, 0},
      {"first failure: retry one slot later", {}, "boom", 2, 0, "retry", "", "2026-11-21T13:30:00Z", 2, 1},
      {"second failure: two slots later", {}, "boom", 2, 1, "retry", "", "2026-11-21T13:45:00Z", 2, 2},
      {"fourth failure: eight slots later", {}, "boom", 2, 3, "retry", "", "2026-11-21T15:15:00Z", 2, 4},
      {"fifth failure: failed", {}, "boom", 2, 4, "finish", "failed", "", 2, 5},
  };
  for (const Case& c : cases) {
    INFO(c.label);
    const Judged j =
        judge(*db, {.answer = c.answer, .error = c.error, .slot = slot, .check_count = c.check_count, .attempts = c.attempts});
    CHECK(j.kind == c.kind);
    CHECK(j.outcome == c.outcome);
    CHECK(j.next == c.next);
    CHECK(j.check_count == c.count_after);
    CHECK(j.attempts == c.attempts_after);
    if (c.error) CHECK(j.last_error == "boom");
    // A guard says why; nothing else leaves an error.
    const bool guarded = std::string(c.outcome).starts_with("guard_");
    CHECK((guarded || c.error.has_value()) == j.last_error.has_value());
    // A reschedule's answer is the check's new asked-for time.
    CHECK(j.asked_for == (j.kind == std::string("reschedule") ? *c.answer : std::string()));
  }
}

TEST_CASE_METHOD(JudgeFixture, "judge: retry backoff is capped at a day and stays on the grid") {
  const Judged j =
      judge(*db, {.error = "x", .slot = "2026-11-21T13:00:00Z", .attempts = 40, .max_attempts = 1000, .slot_seconds = 60});
  CHECK(j.kind == "retry");
  CHECK(j.next == "2026-11-22T13:00:00Z");
  CHECK(judge(*db, {.error = "x", .slot = "2026-11-21T00:00:00Z", .max_attempts = 1000, .slot_seconds = 86400}).next ==
        "2026-11-22T00:00:00Z");
}

TEST_CASE_METHOD(JudgeFixture, "judge: a policy's limits apply, the check's own over its class's") {
  const std::string slot = "2026-11-21T13:00:00Z";
  const Judged guarded = judge(*db, {.answer = "2026-11-21T14:00:00Z", .slot = slot, .max_checks = 1, .slot_seconds = 60});
  CHECK(guarded.outcome == "guard_max_checks");
  CHECK(guarded.last_error ==
        "asked to look again at 2026-11-21T14:00:00Z after run 1: max_checks is 1 (prescient jobs set reminder "
        "--max-checks N|unlimited)");
  CHECK(judge(*db, {.error = "x", .slot = slot, .max_attempts = 1, .slot_seconds = 60}).outcome == "failed");
  // The check's own policy wins, field by field, and says so.
  const Judged own = judge(*db, {.answer = "2026-11-21T14:00:00Z", .slot = slot, .check_count = 1,
                                 .own_max_checks = 2, .max_checks = 0, .slot_seconds = 60});
  CHECK(own.outcome == "guard_max_checks");
  CHECK(own.last_error ==
        "asked to look again at 2026-11-21T14:00:00Z after run 2: max_checks is 2 (the check's own policy)");
  CHECK(judge(*db, {.answer = "2026-11-21T14:00:00Z", .slot = slot, .check_count = 9, .own_max_checks = 0,
                    .max_checks = 2, .slot_seconds = 60})
            .kind == "reschedule");
  CHECK(judge(*db, {.error = "x", .slot = slot, .attempts = 2, .own_max_attempts = 10, .max_attempts = 3,
                    .slot_seconds = 60})
            .kind == "retry");
  CHECK(judge(*db, {.error = "x", .slot = slot, .own_backoff = 300, .backoff = 60, .slot_seconds = 60}).next ==
        "2026-11-21T13:05:00Z");
}

TEST_CASE_METHOD(JudgeFixture, "judge: max_checks 0 is no limit: the thousandth run may ask again, the horizon still guards") {
  const std::string slot = "2026-11-21T13:00:00Z";
  CHECK(judge(*db, {.answer = "2026-11-22T13:00:00Z", .slot = slot, .check_count = 999, .max_checks = 0,
                    .horizon = 86400, .slot_seconds = 60})
            .kind == "reschedule");
  const Judged far = judge(*db, {.answer = "2026-11-22T13:00:01Z", .slot = slot, .check_count = 999, .max_checks = 0,
                                 .horizon = 86400, .slot_seconds = 60});
  CHECK(far.outcome == "guard_horizon");
  CHECK(far.last_error == "answered 2026-11-22T13:00:01Z, beyond the horizon: at most 1d after the slot 2026-11-21T13:00:00Z");
}

TEST_CASE_METHOD(JudgeFixture, "judge: an answer in the past is late, not dead; one at or before the asked-for time is guard_past") {
  // Asked for at 10:00 (+3 h of an order placed at 07:00); the receiver was down, a retry ran at 14:15.
  const Run retried{.slot = "2026-11-21T14:15:00Z", .asked_for = "2026-11-21T10:00:00Z", .attempts = 2,
                    .now = "2026-11-21T14:16:00Z"};
  // It answers placed + 6 h = 13:00: past, but after what it was asked for: rescheduled at the next boundary
  // from now, and 13:00 is what it is asked for from now on.
  Run late = retried;
  late.answer = "2026-11-21T13:00:00Z";
  const Judged j = judge(*db, late);
  CHECK(j.kind == "reschedule");
  CHECK(j.next == "2026-11-21T14:30:00Z");
  CHECK(j.asked_for == "2026-11-21T13:00:00Z");
  CHECK_FALSE(j.last_error);
  Run advancing = retried;
  advancing.answer = "2026-11-21T10:00:00.000001Z";
  CHECK(judge(*db, advancing).kind == "reschedule");
  for (const char* at : {"2026-11-21T10:00:00Z", "2026-11-21T09:00:00Z"}) {
    INFO(at);
    Run loop = retried;
    loop.answer = at;
    const Judged l = judge(*db, loop);
    CHECK(l.outcome == "guard_past");
    CHECK(l.last_error == std::string("answered ") + at +
                              ", not after the time this run was asked for (2026-11-21T10:00:00Z): a next time must "
                              "advance");
  }
}

TEST_CASE_METHOD(JudgeFixture, "judge: a policy's backoff is absolute time, doubling to its ceiling, rounded up to the grid") {
  const std::string slot = "2026-11-21T13:00:00Z";
  const char* expected[] = {"2026-11-21T13:01:00Z", "2026-11-21T13:02:00Z", "2026-11-21T13:04:00Z",
                            "2026-11-21T13:08:00Z", "2026-11-21T13:10:00Z"};  // capped at 10 minutes
  for (int attempts = 0; attempts < 5; ++attempts) {
    INFO(attempts);
    CHECK(judge(*db, {.error = "down", .slot = slot, .attempts = attempts, .max_attempts = 10, .backoff = 60,
                      .backoff_max = 600, .slot_seconds = 1})
              .next == expected[attempts]);
  }
  // On a 15-minute grid, the first boundary after each wait.
  for (const int attempts : {0, 4}) {
    CHECK(judge(*db, {.error = "down", .slot = slot, .attempts = attempts, .max_attempts = 10, .backoff = 60,
                      .backoff_max = 600})
              .next == "2026-11-21T13:15:00Z");
  }
  // Without a backoff: one slot, doubling.
  CHECK(judge(*db, {.error = "down", .slot = slot, .attempts = 2, .max_attempts = 10}).next == "2026-11-21T14:00:00Z");
  // A backoff over the ceiling raises the ceiling to it.
  CHECK(judge(*db, {.error = "down", .slot = slot, .max_attempts = 10, .backoff = 7200, .backoff_max = 600}).next ==
        "2026-11-21T15:00:00Z");
}

TEST_CASE_METHOD(JudgeFixture, "judge: an error text is stored as at most 4096 bytes, cut at a character with a marker") {
  const std::string long_error(5000, 'x');
  const Judged j = judge(*db, {.error = long_error, .slot = "2026-11-21T13:00:00Z"});
  REQUIRE(j.last_error);
  CHECK(j.last_error->size() <= 4096);
  CHECK_THAT(*j.last_error, Catch::EndsWith("\xE2\x80\xA6[cut: 5000 bytes in all]"));
  // Multi-byte characters are never split.
  std::string wide;
  for (int i = 0; i < 3000; ++i) wide += "\xC3\xA9";  // é, two bytes
  const Judged w = judge(*db, {.error = wide, .slot = "2026-11-21T13:00:00Z"});
  REQUIRE(w.last_error);
  CHECK(w.last_error->size() <= 4096);
  CHECK_THAT(*w.last_error, Catch::StartsWith("\xC3\xA9\xC3\xA9") && Catch::EndsWith("[cut: 6000 bytes in all]"));
  // A short one is kept as it is.
  CHECK(judge(*db, {.error = "short", .slot = "2026-11-21T13:00:00Z"}).last_error == "short");
}

TEST_CASE("judge: the runner's settlement has the planner inline it, not call it per check") {
  // Called per row, the judge costs 26 us a check (the drain halves); inlined, about one. A sub-SELECT or a
  // volatile function among its arguments is enough to stop the inlining. The statement runs inside
  // prescient.runner_settle_together, so its plan is read as auto_explain reports nested statements.
  ExplainedSession session(create_migrated_database(), false);
  // One check, done, which does not exist: the statement runs and settles nothing.
  session.run("SELECT * FROM prescient.runner_settle("
      "p_checks => ROW('{1}', NULL, NULL, NULL, NULL, NULL, '{0}', NULL, NULL, NULL, '{0}', '{0}', NULL, NULL, NULL,"
      " NULL, NULL, NULL, NULL, NULL)::prescient.settle_checks,"
      " p_events => ROW('{}', '{}', '{}', '{}', '{}', '{}', '{}')::prescient.settle_events,"
      " p_context => ROW('r', now(), NULL, 60, 86400)::prescient.settle_context, p_in_chunks => false)");
  const auto at = session.plans().find("DELETE FROM prescient.future_job");
  REQUIRE(at != std::string::npos);
  const std::string plan = session.plans().substr(at);
  INFO(plan);
  CHECK_THAT(plan, Catch::Contains("Function Scan on s") || Catch::Contains("ROWS FROM"));
  CHECK_THAT(plan, !Catch::Contains("prescient.judge"));
  // The records cost nothing once inlined: each field read is the expression in its place.
  CHECK_THAT(plan, !Catch::Contains("judged_run") && !Catch::Contains("check_limits"));
}
