#pragma once
// Database-wide settings, so every runner and enqueuer agrees on the grid and the guards.
#include <chrono>

#include "prescient/slot_grid.hpp"

namespace soci {
class session;
}

namespace prescient {

struct Settings {
  std::chrono::seconds slot{60};
  std::chrono::seconds max_horizon{365 * 86400};
  int max_checks = 5;
  int max_attempts = 5;
  std::chrono::seconds job_timeout{30};

  SlotGrid grid() const { return SlotGrid(slot); }
};

// The database's settings (the one row of prescient.settings). Throws DatabaseError when there is none.
Settings read_settings(soci::session& db);

}  // namespace prescient
