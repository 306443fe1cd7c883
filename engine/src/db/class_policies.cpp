#include "db/class_policies.hpp"

#include "db/pq.hpp"

namespace prescient::db {
namespace {

std::optional<std::chrono::seconds> seconds_of(const pq::Result& rows, int r, int column) {
  const auto value = rows.optional_integer(r, column);
  return value ? std::optional(std::chrono::seconds{*value}) : std::nullopt;
}

std::optional<int> count_of(const pq::Result& rows, int r, int column) {
  const auto value = rows.optional_integer(r, column);
  return value ? std::optional(static_cast<int>(*value)) : std::nullopt;
}

}  // namespace

std::map<std::string, JobPolicy> read_class_policies(PGconn* conn) {
  const pq::Result rows = pq::exec(
      conn, "cannot read the job classes' policies",
      "SELECT job, max_checks, max_attempts, backoff_seconds, backoff_max_seconds, timeout_seconds"
      "  FROM prescient.job_class"
      " WHERE num_nonnulls(max_checks, max_attempts, backoff_seconds, backoff_max_seconds, timeout_seconds) > 0");
  std::map<std::string, JobPolicy> out;
  for (int r = 0; r < rows.rows(); ++r) {
    out[rows.text(r, 0)] = {.max_checks = count_of(rows, r, 1),
                            .max_attempts = count_of(rows, r, 2),
                            .timeout = seconds_of(rows, r, 5),
                            .backoff = seconds_of(rows, r, 3),
                            .backoff_max = seconds_of(rows, r, 4)};
  }
  return out;
}

}  // namespace prescient::db
