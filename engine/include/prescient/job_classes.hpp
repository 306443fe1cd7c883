#pragma once
// The database's registry of job classes (prescient.job_class; docs/design.md, "The class registry"): every
// class this database knows, which enqueue checks (an unknown class is refused, listing the known ones). A
// runner declares the classes it loads at its start; `prescient jobs add` declares one ahead (or one run by
// workers in another language), `jobs forget` removes one, `jobs set` sets a class's policy. Each call is
// one statement of the SQL functions that hold the rules (sql/functions/067_job_classes.sql): a refusal is
// their message (InvalidInput; NotFound for a class that is not a row).
#include <nlohmann/json.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "prescient/time.hpp"

namespace soci {
class session;
}

namespace prescient {

class Registry;

// A row of prescient.job_class. The policy's fields are empty when not set there.
struct JobClassRow {
  std::string job;
  std::string runs_in;  // runner or worker
  std::string origin;   // built-in, a plugin's file, declared (ahead of its runner) or worker
  TimePoint declared_at;
  std::string declared_by;
  std::optional<TimePoint> seen_at;  // when a runner last declared it
  std::optional<int> max_checks;     // 0: no limit
  std::optional<int> max_attempts;
  std::optional<std::chrono::seconds> backoff, backoff_max, timeout;
  std::optional<TimePoint> policy_updated_at;
  std::optional<std::string> policy_updated_by;
};

// A change of a class's policy: a field given is set, one named in `clear` is cleared (the runner falls back
// to the class's coded policy, the config file, then the settings), the others stay as they are.
struct JobPolicyChange {
  std::optional<int> max_checks, max_attempts;
  std::optional<std::chrono::seconds> backoff, backoff_max, timeout;
  std::vector<std::string> clear;  // of max_checks, max_attempts, backoff, backoff_max, timeout
};

// A row with what the dashboard's Jobs page shows beside it: whether runners take none of its checks (paused
// with `prescient jobs pause`), and its pending checks as the queue's figures last counted them (null when
// they were never counted).
struct JobClassListing {
  JobClassRow row;
  std::optional<TimePoint> paused_at;
  std::optional<std::string> paused_by;
  std::optional<long long> pending;
};

// A runner at its start: declares every class of `registry` (built-ins and plugins), seen now. Returns how
// many were new to the database.
int declare_job_classes(soci::session& db, const Registry& registry, const std::string& by, TimePoint now);
// Every row, by name.
std::vector<JobClassRow> job_classes(soci::session& db);
// Every row, by name, with its pause and its counted pending checks.
std::vector<JobClassListing> job_class_listing(soci::session& db);
// The row of `job`, or nothing when the registry has none.
std::optional<JobClassRow> job_class(soci::session& db, const std::string& job);
// Declares `job` ahead of its runner, or as run by workers: "added", or "known" when it was a row already.
std::string add_job_class(soci::session& db, const std::string& job, bool worker, const std::string& by, TimePoint now);
// Removes the row. Refused for a built-in class and for one with pending checks or schedules.
void forget_job_class(soci::session& db, const std::string& job);
// The row after the change.
JobClassRow set_job_policy(soci::session& db, const std::string& job, const JobPolicyChange& change,
                           const std::string& by, TimePoint now);

nlohmann::json to_json(const JobClassRow& row);
// to_json(row) with "paused" (null, or {"paused_at", "paused_by"}) and "pending" (null: never counted).
nlohmann::json to_json(const JobClassListing& listing);

}  // namespace prescient
