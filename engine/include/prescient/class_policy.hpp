#pragma once
// One job class's row of the class registry (prescient.job_class), as the dashboard's check page shows it:
// the policy set there for the class. A NULL field is not set here: the class's own (C++) policy, the config
// file's defaults or the database's settings decide it (docs/guarantees.md, "Policies").
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include "prescient/time.hpp"

namespace soci {
class session;
}

namespace prescient {

struct ClassPolicyRow {
  std::string job;
  std::string runs_in;  // runner | worker
  std::string origin;
  std::optional<std::int64_t> max_checks;  // 0: no limit
  std::optional<std::int64_t> max_attempts;
  std::optional<std::int64_t> backoff_seconds;
  std::optional<std::int64_t> backoff_max_seconds;
  std::optional<std::int64_t> timeout_seconds;
  std::optional<TimePoint> policy_updated_at;
  std::optional<std::string> policy_updated_by;
};

// The class's row, or nothing when the registry has none for it. One parameterised SELECT.
std::optional<ClassPolicyRow> class_policy(soci::session& db, const std::string& job);

// {"job", "runs_in", "origin", "max_checks", ..., "timeout_seconds", "policy_updated_at", "policy_updated_by"};
// a field not set is null.
nlohmann::json to_json(const ClassPolicyRow& row);

}  // namespace prescient
