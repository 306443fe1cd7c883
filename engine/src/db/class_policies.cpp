#include "db/class_policies.hpp"

#include "prescient/job_classes.hpp"

namespace prescient::db {

std::map<std::string, JobPolicy> read_class_policies(soci::session& db) {
  std::map<std::string, JobPolicy> out;
  for (const JobClassRow& row : job_classes(db)) {
    const JobPolicy policy{.max_checks = row.max_checks,
                           .max_attempts = row.max_attempts,
                           .timeout = row.timeout,
                           .backoff = row.backoff,
                           .backoff_max = row.backoff_max};
    if (policy != JobPolicy{}) out.emplace(row.job, policy);
  }
  return out;
}

}  // namespace prescient::db
