#include "prescient/runners_seen.hpp"

#include "db/connection.hpp"
#include "db/pq.hpp"
#include "prescient/time_text.hpp"

namespace prescient {

using namespace prescient::db;

void record_runner_seen(soci::session& db, const std::string& runner_id, const std::string& shard, TimePoint slot,
                        long long claimed, TimePoint now) {
  pq::exec(native_connection(db), "cannot record the runner as seen",
           "SELECT prescient.record_runner_seen($1, $2, prescient.at_us($3), $4, prescient.at_us($5))",
           {runner_id, shard, pq::micros(slot), std::to_string(claimed), pq::micros(now)});
}

std::vector<RunnerSeen> runners_seen(soci::session& db, TimePoint now) {
  const pq::Result rows = pq::exec(
      native_connection(db), "cannot read the runners seen",
      "SELECT runner_id, shard, prescient.us(first_seen_at), prescient.us(last_slot), prescient.us(seen_at), claimed,"
      "       floor(extract(epoch FROM date_bin(make_interval(secs => s.slot_seconds), prescient.at_us($1),"
      "                                           timestamptz 'epoch') - last_slot) / s.slot_seconds)::bigint"
      "  FROM prescient.runner_seen, prescient.settings s ORDER BY runner_id",
      {pq::micros(now)});
  std::vector<RunnerSeen> out(rows.rows());
  for (int r = 0; r < rows.rows(); ++r) {
    out[r] = {.runner_id = rows.text(r, 0),
              .shard = rows.text(r, 1),
              .first_seen_at = rows.time(r, 2),
              .last_slot = rows.time(r, 3),
              .seen_at = rows.time(r, 4),
              .claimed = rows.integer(r, 5),
              .slots_behind = rows.integer(r, 6)};
  }
  return out;
}

nlohmann::json to_json(const RunnerSeen& runner) {
  return {{"runner_id", runner.runner_id},       {"shard", runner.shard},
          {"first_seen_at", format_time(runner.first_seen_at)}, {"last_slot", format_time(runner.last_slot)},
          {"seen_at", format_time(runner.seen_at)}, {"claimed", runner.claimed},
          {"slots_behind", runner.slots_behind}};
}

}  // namespace prescient
