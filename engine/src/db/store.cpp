#include "db/store.hpp"

#include <soci/soci.h>

#include "db/pq.hpp"
#include "prescient/errors.hpp"

namespace prescient {

Store::Store(soci::session& db) : db_(db), prepared_(std::make_unique<pq::PreparedStatements>()) {}
Store::~Store() = default;

Settings Store::settings() {
  Settings s;
  long long slot = 0, horizon = 0, timeout = 0;
  soci::indicator found = soci::i_null;
  db_ << "SELECT slot_seconds, max_horizon_seconds, max_checks, max_attempts, job_timeout_seconds"
         " FROM prescient.settings",
      soci::into(slot, found), soci::into(horizon), soci::into(s.max_checks), soci::into(s.max_attempts),
      soci::into(timeout);
  if (!db_.got_data()) throw DatabaseError("prescient.settings is empty: run `prescient migrate`");
  s.slot = std::chrono::seconds{slot};
  s.max_horizon = std::chrono::seconds{horizon};
  s.job_timeout = std::chrono::seconds{timeout};
  return s;
}

}  // namespace prescient
