#pragma once
// `prescient doctor`'s judgement of the database's health (database_health.hpp): each problem found, with
// what to do about it. Pure: the figures in, the problems out. In the db layer (engine/src/db/) although it
// runs no statement: its advice is SQL for the operator to run, and SQL text lives in sql/ and db/ only.
#include <chrono>
#include <string>
#include <vector>

#include "prescient/database_health.hpp"

namespace prescient {

// When a figure becomes a problem (doctor's options; docs/operations.md's alerts use the same defaults).
struct HealthLimits {
  // A holder of the horizon held longer than this, or further behind than horizon_xids transactions (the one
  // figure a replication slot or a standby's feedback has), is a problem.
  std::chrono::seconds horizon_age{std::chrono::minutes{5}};
  long long horizon_xids = 1'000'000;
  // A table with at least min_dead_tuples dead tuples and more than twice the number at which autovacuum takes
  // it: autovacuum is not keeping up, or cannot remove them.
  long long min_dead_tuples = 10'000;
  // A check overdue for longer than this: the slots are not being fired.
  std::chrono::seconds backlog_age{std::chrono::minutes{2}};
};

struct HealthProblem {
  std::string subject;  // "replica", "horizon", "dead tuples", "backlog"
  std::string finding;  // what is wrong, naming the session, slot, table or check
  std::string advice;   // what to do
};

// The problems: figures read on a replica first (they are not the primary's), then the horizon's (they
// explain the dead tuples), the tables', the backlog's.
std::vector<HealthProblem> health_problems(const DatabaseHealth& health, const HealthLimits& limits);

}  // namespace prescient
