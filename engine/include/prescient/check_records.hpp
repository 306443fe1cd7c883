#pragma once
// Checks as they are read back: a pending row of future_job, or a row of job_history.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include "prescient/outcome.hpp"
#include "prescient/time.hpp"

namespace prescient {

// What a check carries from enqueue to history. Fields are named as the columns are, everywhere: in
// SQL, in JSON and in CLI flags (entity_name is --entity-name, job_key is --job-key).
struct CheckFields {
  std::int64_t id = 0;
  std::string job;
  std::string entity_name;
  std::string entity_key;
  std::optional<std::string> job_key;
  std::optional<std::string> group_key;
  nlohmann::json payload;
  TimePoint first_check_at;
  int check_count = 0;
  int attempts = 0;
  std::optional<std::string> last_error;
  TimePoint enqueued_on;
  std::string enqueued_by;
};

struct PendingCheck : CheckFields {
  TimePoint next_check_at;
};

struct HistoryEntry : CheckFields {
  TimePoint last_check_at;  // the slot it last ran at (or was due at, when cancelled)
  std::int64_t history_id = 0;
  TimePoint finished_at;
  std::string finished_by;
  Outcome outcome = Outcome::done;
  std::optional<std::int64_t> run_micros;
};

// Filters; an empty field does not filter.
struct PendingFilter {
  std::optional<std::string> job, entity_name, entity_key, group_key, job_key;
  std::optional<std::int64_t> id;
  std::optional<TimePoint> due_before;
  int limit = 100;
};

struct HistoryFilter {
  std::optional<std::string> job_key, entity_name, entity_key;
  std::optional<Outcome> outcome;
  std::optional<std::int64_t> id;
  std::optional<TimePoint> since;
  int limit = 100;
};

nlohmann::json to_json(const PendingCheck& check);
nlohmann::json to_json(const HistoryEntry& entry);

}  // namespace prescient
