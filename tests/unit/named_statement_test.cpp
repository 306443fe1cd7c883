// Statements bound by name (db/named_statement.hpp): the text's names numbered in order of first use, and
// every runner statement's values struct setting exactly the names its statement has.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include "db/named_statement.hpp"
#include "db/runner_statements.hpp"

using prescient::TimePoint;
using prescient::db::pq::Binding;
using prescient::db::pq::NamedStatement;

TEST_CASE("named statement: names become $n in order of first use; casts and strings stay as written") {
  struct Row {
    std::string text, sql;
    std::vector<std::string> names;
  };
  const std::vector<Row> table = {
      {"SELECT :a, :b, :a", "SELECT $1, $2, $1", {"a", "b"}},
      {"SELECT :ids::bigint[]", "SELECT $1::bigint[]", {"ids"}},
      {"SELECT x::text FROM t WHERE y = :y_2", "SELECT x::text FROM t WHERE y = $1", {"y_2"}},
      {"SELECT 'prescient.group:' || g", "SELECT 'prescient.group:' || g", {}},
      {":first", "$1", {"first"}},
      {"SELECT : a, :1", "SELECT : a, :1", {}},
  };
  for (const Row& row : table) {
    INFO(row.text);
    const NamedStatement statement(row.text);
    CHECK(statement.sql() == row.sql);
    CHECK(statement.names() == row.names);
  }
  CHECK_THROWS_AS(NamedStatement("SELECT :a, $2"), std::logic_error);
}

TEST_CASE("named statement: a name unknown, set twice or left unset is refused, naming it") {
  const NamedStatement statement("UPDATE t SET a = :a WHERE id = :id AND b = :b");
  CHECK_THROWS_WITH(Binding(statement).set("c", "1"), "the statement has no parameter :c");
  CHECK_THROWS_WITH(Binding(statement).set("a", "1").set("a", "2"), "the parameter :a is set twice");
  Binding partial(statement);
  partial.set("id", "7");
  CHECK_THROWS_WITH(std::move(partial).take(), "the statement's parameters :a, :b are not set");
  Binding full(statement);
  full.set("b", "3").set("id", "2").set("a", "1");
  const auto params = std::move(full).take();
  REQUIRE(params.size() == 3);
  CHECK(*params[0].value == "1");  // :a is $1, whatever order it was set in
  CHECK(*params[1].value == "2");
  CHECK(*params[2].value == "3");
}

TEST_CASE("named statement: each runner statement's values set every one of its parameters, once") {
  using namespace prescient::db::runner_sql;
  using prescient::db::pq::bound;
  const TimePoint t{};
  const std::vector<std::string> texts;
  const std::vector<std::optional<std::string>> optional_texts;
  const std::vector<std::int64_t> ids;
  const std::vector<std::optional<std::int64_t>> optional_ids;
  const std::vector<TimePoint> times;
  const std::vector<std::optional<TimePoint>> optional_times;
  const std::string runner = "r";
  const Claimable claimable{.now = t, .excluded_jobs = texts, .excluded_ids = ids};
  const auto count = [](const NamedStatement& statement, const auto& values) {
    INFO(statement.sql());
    return bound(statement, values).size() == statement.names().size();
  };
  CHECK(count(kClaimDue, ClaimDue{.slot = t, .until = t, .claimable = claimable, .limit = 1}));
  CHECK(count(kClaimDueFair,
              ClaimDueFair{.field = "f", .slot = t, .limit = 1, .weights = "{}", .claimable = claimable, .after = {}}));
  CHECK(count(kClaimDueGroups,
              ClaimDueGroups{.slot = t, .excluded_groups = texts, .max_groups = 1, .excluded_jobs = texts}));
  CHECK(count(kSettle, Settle{.ids = ids,
                              .errors = optional_texts,
                              .answers = optional_times,
                              .run_micros = optional_ids,
                              .payload_updates = optional_texts,
                              .results = optional_texts,
                              .due_us = ids,
                              .jobs = texts,
                              .slots = times,
                              .asked = times,
                              .check_counts = ids,
                              .attempts = ids,
                              .own_max_checks = optional_ids,
                              .own_max_attempts = optional_ids,
                              .own_backoff = optional_ids,
                              .own_backoff_max = optional_ids,
                              .max_checks = ids,
                              .max_attempts = ids,
                              .backoff = optional_ids,
                              .backoff_max = optional_ids,
                              .max_horizon_seconds = 1,
                              .slot_seconds = 1,
                              .all_done = false,
                              .lease_token = std::nullopt,
                              .in_chunks = false,
                              .now = t,
                              .runner_id = runner,
                              .event_ids = optional_texts,
                              .event_types = optional_texts,
                              .event_sources = optional_texts,
                              .event_times = ids,
                              .event_payloads = optional_texts,
                              .event_checks = ids,
                              .event_traceparents = optional_texts}));
  CHECK(count(kLease, Lease{.runner_id = runner, .until = t, .ids = ids}));
  CHECK(count(kLockLiveLeases, LockLiveLeases{.ids = ids, .token = 1, .now = t}));
  CHECK(count(kReleaseLeases, ReleaseLeases{.ids = ids, .token = 1}));
  CHECK(count(kAdmit, Admit{.check_ids = ids,
                            .limits = optional_texts,
                            .keys = optional_texts,
                            .now = t,
                            .pace = {},
                            .longest_wait = {},
                            .places = 1,
                            .grace = {}}));
  CHECK(count(kNextWaiting, NextWaiting{.slot = t, .next_slot = t, .claimable = claimable}));
  CHECK(count(kNextOverdueSlot, NextOverdueSlot{.from = t, .until = t}));
  CHECK(count(kShiftSlot, ShiftSlot{.to = t, .slot = t, .limit = 1}));
}
