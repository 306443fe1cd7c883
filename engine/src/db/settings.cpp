// The database's settings, read through libpq like every statement of prescient's own.
#include "prescient/settings.hpp"

#include "db/connection.hpp"
#include "db/pq.hpp"
#include "prescient/errors.hpp"

namespace prescient {

using namespace prescient::db;

Settings read_settings(soci::session& db) {
  const pq::Result row =
      pq::exec(native_connection(db), "cannot read settings",
               "SELECT slot_seconds, max_horizon_seconds, max_checks, max_attempts, job_timeout_seconds"
               " FROM prescient.settings");
  if (row.rows() != 1) throw DatabaseError("prescient.settings is empty: run `prescient migrate`");
  return {.slot = std::chrono::seconds{row.integer(0, 0)},
          .max_horizon = std::chrono::seconds{row.integer(0, 1)},
          .max_checks = static_cast<int>(row.integer(0, 2)),
          .max_attempts = static_cast<int>(row.integer(0, 3)),
          .job_timeout = std::chrono::seconds{row.integer(0, 4)}};
}

}  // namespace prescient
