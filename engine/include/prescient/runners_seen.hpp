#pragma once
// Which daemons are firing: each records the slots it completes (prescient.runner_seen, one row a
// runner), and the dashboard shows them, with how many slots each is behind the current one.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "prescient/time.hpp"

namespace soci {
class session;
}

namespace prescient {

struct RunnerSeen {
  std::string runner_id;
  std::string shard;
  TimePoint first_seen_at, last_slot, seen_at;
  long long claimed = 0;       // checks it claimed in last_slot
  long long slots_behind = 0;  // whole slots from last_slot to the slot of `now`: 0 or 1 for a runner firing
};

// One statement; the daemon calls it after each slot it completes.
void record_runner_seen(soci::session& db, const std::string& runner_id, const std::string& shard, TimePoint slot,
                        long long claimed, TimePoint now);

// Every runner seen in the last week, by id.
std::vector<RunnerSeen> runners_seen(soci::session& db, TimePoint now);

nlohmann::json to_json(const RunnerSeen& runner);

}  // namespace prescient
