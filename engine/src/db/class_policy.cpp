#include "prescient/class_policy.hpp"

#include "db/connection.hpp"
#include "db/pq.hpp"
#include "prescient/time_text.hpp"

namespace prescient {

using namespace prescient::db;

std::optional<ClassPolicyRow> class_policy(soci::session& db, const std::string& job) {
  const pq::Result rows = pq::exec(
      native_connection(db), "cannot read the job class's policy",
      "SELECT job, runs_in, origin, max_checks, max_attempts, backoff_seconds, backoff_max_seconds, timeout_seconds,"
      "       prescient.us(policy_updated_at), policy_updated_by"
      "  FROM prescient.job_class WHERE job = $1",
      {job});
  if (rows.rows() == 0) return std::nullopt;
  return ClassPolicyRow{.job = rows.text(0, 0),
                        .runs_in = rows.text(0, 1),
                        .origin = rows.text(0, 2),
                        .max_checks = rows.optional_integer(0, 3),
                        .max_attempts = rows.optional_integer(0, 4),
                        .backoff_seconds = rows.optional_integer(0, 5),
                        .backoff_max_seconds = rows.optional_integer(0, 6),
                        .timeout_seconds = rows.optional_integer(0, 7),
                        .policy_updated_at = rows.optional_time(0, 8),
                        .policy_updated_by = rows.optional_text(0, 9)};
}

nlohmann::json to_json(const ClassPolicyRow& row) {
  const auto number = [](const std::optional<std::int64_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  return {{"job", row.job},
          {"runs_in", row.runs_in},
          {"origin", row.origin},
          {"max_checks", number(row.max_checks)},
          {"max_attempts", number(row.max_attempts)},
          {"backoff_seconds", number(row.backoff_seconds)},
          {"backoff_max_seconds", number(row.backoff_max_seconds)},
          {"timeout_seconds", number(row.timeout_seconds)},
          {"policy_updated_at",
           row.policy_updated_at ? nlohmann::json(format_time(*row.policy_updated_at)) : nlohmann::json(nullptr)},
          {"policy_updated_by", row.policy_updated_by ? nlohmann::json(*row.policy_updated_by) : nlohmann::json(nullptr)}};
}

}  // namespace prescient
