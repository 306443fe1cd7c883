#include "prescient/queue_stats.hpp"

#include <soci/soci.h>

#include "db/pq.hpp"
#include "db/transaction.hpp"
#include "db/connection.hpp"
#include "prescient/database.hpp"
#include "prescient/slot_grid.hpp"
#include "prescient/settings.hpp"

namespace prescient {

QueueStats queue_stats(soci::session& db, TimePoint now, int slots_ahead) {
  QueueStats stats;
  stats.now = now;
  PGconn* conn = native_connection(db);
  detail::Transaction snapshot(db, detail::Transaction::Mode::read_only_snapshot);
  {
    const Settings settings = read_settings(db);
    const SlotGrid grid = settings.grid();
    stats.current_slot = grid.floor(now);
    const auto us = [](TimePoint t) { return std::to_string(to_unix_micros(t)); };
    const std::string slot_us = us(stats.current_slot);

    const pq::Result counts = pq::exec(
        conn, "cannot count pending checks",
        "SELECT count(*), count(*) FILTER (WHERE next_check_at <= prescient.at_us($1)),"
        "       count(*) FILTER (WHERE next_check_at < prescient.at_us($1))"
        "  FROM prescient.future_job",
        {slot_us});
    stats.pending = counts.integer(0, 0);
    stats.due_now = counts.integer(0, 1);
    stats.overdue = counts.integer(0, 2);

    const pq::Result paused = pq::exec(
        conn, "cannot read the paused job classes",
        "SELECT p.job, prescient.us(p.paused_at), p.paused_by,"
        "       (SELECT count(*) FROM prescient.future_job f WHERE f.job = p.job)"
        "  FROM prescient.paused_job p ORDER BY p.job");
    for (int r = 0; r < paused.rows(); ++r) {
      stats.paused.push_back({paused.text(r, 0), paused.time(r, 1), paused.text(r, 2), paused.integer(r, 3)});
    }

    const pq::Result oldest = pq::exec(conn, "cannot find the oldest overdue check",
                                       "SELECT id, job, prescient.us(next_check_at) FROM prescient.future_job"
                                       " WHERE next_check_at < prescient.at_us($1) ORDER BY next_check_at, id LIMIT 1",
                                       {slot_us});
    if (oldest.rows() == 1) {
      stats.oldest_overdue = QueueStats::Oldest{oldest.integer(0, 0), oldest.text(0, 1), oldest.time(0, 2)};
    }

    // Rows off the grid (other tools) count in the slot that will run them: the next boundary.
    const TimePoint last = stats.current_slot + grid.resolution() * slots_ahead;
    const pq::Result ahead = pq::exec(
        conn, "cannot count the next slots",
        "SELECT prescient.us(date_bin($3::int * interval '1 second',"
        "                             next_check_at + $3::int * interval '1 second' - interval '1 microsecond', 'epoch')),"
        "       count(*)"
        "  FROM prescient.future_job"
        " WHERE next_check_at > prescient.at_us($1) AND next_check_at <= prescient.at_us($2)"
        " GROUP BY 1",
        {slot_us, us(last), std::to_string(grid.resolution().count())});
    std::map<std::int64_t, long long> by_slot;
    for (int r = 0; r < ahead.rows(); ++r) by_slot[ahead.integer(r, 0)] = ahead.integer(r, 1);
    for (int i = 1; i <= slots_ahead; ++i) {
      const TimePoint slot = stats.current_slot + grid.resolution() * i;
      const auto found = by_slot.find(to_unix_micros(slot));
      stats.next_slots.push_back({slot, found == by_slot.end() ? 0 : found->second});
    }

    const pq::Result finished = pq::exec(
        conn, "cannot summarise the history",
        "SELECT outcome, count(*) FILTER (WHERE finished_at >= prescient.at_us($1) - interval '1 hour'), count(*)"
        "  FROM prescient.job_history WHERE finished_at >= prescient.at_us($1) - interval '1 day'"
        " GROUP BY outcome ORDER BY outcome",
        {us(now)});
    for (int r = 0; r < finished.rows(); ++r) {
      const Outcome outcome = parse_outcome(finished.text(r, 0));
      if (finished.integer(r, 1) > 0) stats.finished_last_hour[outcome] = finished.integer(r, 1);
      stats.finished_last_day[outcome] = finished.integer(r, 2);
    }

    const pq::Result dead = pq::exec(
        conn, "cannot count dead letters",
        "SELECT count(DISTINCT h.id) FROM prescient.job_history h"
        " WHERE h.outcome = 'failed' AND h.finished_at >= prescient.at_us($1) - interval '30 days'"
        "   AND NOT EXISTS (SELECT FROM prescient.future_job f WHERE f.id = h.id)",
        {us(now)});
    stats.dead_letters = dead.integer(0, 0);
  }
  snapshot.commit();
  return stats;
}

PendingByHorizon pending_by_horizon(soci::session& db, TimePoint now) {
  const SlotGrid grid = read_settings(db).grid();
  const TimePoint slot = grid.floor(now);
  const pq::Result row = pq::exec(
      native_connection(db), "cannot count pending checks",
      "SELECT count(*) FILTER (WHERE next_check_at < prescient.at_us($1)),"
      "       count(*) FILTER (WHERE next_check_at = prescient.at_us($1)),"
      "       count(*) FILTER (WHERE next_check_at > prescient.at_us($1) AND next_check_at <= prescient.at_us($2)),"
      "       count(*) FILTER (WHERE next_check_at > prescient.at_us($2) AND next_check_at <= prescient.at_us($3)),"
      "       count(*) FILTER (WHERE next_check_at > prescient.at_us($3))"
      "  FROM prescient.future_job WHERE next_check_at <= prescient.at_us($4)",
      {pq::micros(slot), pq::micros(slot + std::chrono::hours{1}), pq::micros(slot + std::chrono::days{1}),
       pq::micros(slot + std::chrono::days{7})});
  return {.overdue = row.integer(0, 0),
          .due = row.integer(0, 1),
          .next_hour = row.integer(0, 2),
          .next_day = row.integer(0, 3),
          .next_week = row.integer(0, 4)};
}

}  // namespace prescient
