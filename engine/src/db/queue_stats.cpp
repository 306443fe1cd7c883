#include "prescient/queue_stats.hpp"

#include <soci/soci.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>

#include "db/connection.hpp"
#include "db/flow_limit_rows.hpp"
#include "db/pq.hpp"
#include "db/transaction.hpp"
#include "prescient/database.hpp"
#include "prescient/errors.hpp"
#include "prescient/settings.hpp"
#include "prescient/slot_grid.hpp"
#include "prescient/time_text.hpp"

namespace prescient {

using namespace prescient::db;
namespace {

std::map<Outcome, long long> by_outcome(const pq::Result& rows) {
  std::map<Outcome, long long> counts;
  for (int r = 0; r < rows.rows(); ++r) counts[parse_outcome(rows.text(r, 0))] = rows.integer(r, 1);
  return counts;
}

nlohmann::json by_outcome_json(const std::map<Outcome, long long>& counts) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [outcome, n] : counts) out[std::string(to_string(outcome))] = n;
  return out;
}

// For readers that never count (Micros::max()): figures never counted yet (a daemon just started) are
// counted now, or waited for while another session counts them. Throws DatabaseError when this role
// may not count them.
void count_if_never_counted(soci::session& db, TimePoint now) {
  if (pq::exec(native_connection(db), "cannot read the queue figures",
               "SELECT NOT EXISTS (SELECT FROM prescient.queue_figures)")
          .text(0, 0) == "t") {
    refresh_queue_figures(db, now, kFiguresMaxAge);
  }
}

// Whether a check was enqueued since the figures were counted: one with a higher id than the newest the
// count saw (one probe of the primary key). Figures of any age miss it then: `stats` right after a bulk
// enqueue said `pending 0`. Cancels and settlements are not looked for; the figures' age covers them.
bool enqueued_since_counted(soci::session& db) {
  return pq::exec(native_connection(db), "cannot read the queue figures",
                  "SELECT EXISTS (SELECT FROM prescient.future_job"
                  "                WHERE id > (SELECT newest_check_id FROM prescient.queue_figures))")
             .text(0, 0) == "t";
}

}  // namespace

nlohmann::json to_json(const QueueStats& s) {
  nlohmann::json next = nlohmann::json::array();
  for (const auto& slot : s.next_slots) next.push_back({{"slot", format_time(slot.slot)}, {"checks", slot.checks}});
  nlohmann::json oldest = nullptr;
  if (s.oldest_overdue) {
    oldest = {{"id", s.oldest_overdue->id},
              {"job", s.oldest_overdue->job},
              {"next_check_at", format_time(s.oldest_overdue->next_check_at)}};
  }
  nlohmann::json paused = nlohmann::json::array();
  for (const auto& p : s.paused) {
    paused.push_back({{"job", p.job}, {"paused_at", format_time(p.paused_at)}, {"paused_by", p.paused_by},
                      {"pending", p.pending}});
  }
  nlohmann::json deferrals = nlohmann::json::array();
  for (const FlowFigure& d : s.deferrals) deferrals.push_back(to_json(d));
  return {{"now", format_time(s.now)},
          {"deferrals", deferrals},
          {"counted_at", format_time(s.counted_at)},
          {"count_millis", s.count_millis},
          {"current_slot", format_time(s.current_slot)},
          {"paused_classes", paused},
          {"pending", s.pending},
          {"due_now", s.due_now},
          {"overdue", s.overdue},
          {"oldest_overdue", oldest},
          {"next_slots", next},
          {"finished_last_hour", by_outcome_json(s.finished_last_hour)},
          {"finished_last_day", by_outcome_json(s.finished_last_day)},
          {"dead_letters", s.dead_letters}};
}

BucketSpan past_day_hours(TimePoint now) {
  using std::chrono::hours;
  const TimePoint hour = std::chrono::floor<hours>(now);
  return {.from = std::chrono::floor<hours>(now - hours{24}), .to = hour + hours{1}, .width = hours{1}};
}

void add_span(nlohmann::json& answer, const BucketSpan& span) {
  answer["from"] = format_time(span.from);
  answer["to"] = format_time(span.to);
  answer["bucket_seconds"] = std::chrono::duration_cast<std::chrono::seconds>(span.width).count();
}

namespace {

// The slots ahead the figures count one by one (v_last_slot in sql/functions/075_queue_figures.sql).
constexpr std::int64_t kFigureSlots = 1000;

// The buckets a zoom shows: from the first after the current slot to the last that starts within its reach
// (an hour of slots, but no further than the figures keep slots; a day of hours; 366 days). UTC hours and
// days, as the figures bin them.
struct FutureReach {
  BucketSpan span;
  TimePoint through;  // the last time a bucket may start at
};
FutureReach future_reach(FutureZoom zoom, TimePoint current_slot, std::chrono::seconds slot) {
  using std::chrono::days, std::chrono::floor, std::chrono::hours;
  if (zoom == FutureZoom::slot) {
    const auto slots = std::min<std::int64_t>(hours{1} / slot, kFigureSlots);
    const TimePoint through = current_slot + slots * slot;
    return {{.from = current_slot + slot, .to = through + slot, .width = slot}, through};
  }
  const TimePoint first = current_slot + slot;
  if (zoom == FutureZoom::hour) {
    const TimePoint through = current_slot + hours{24};
    return {{.from = floor<hours>(first), .to = floor<hours>(through) + hours{1}, .width = hours{1}}, through};
  }
  const TimePoint through = current_slot + days{366};
  return {{.from = floor<days>(first), .to = floor<days>(through) + days{1}, .width = days{1}}, through};
}

}  // namespace

Future future(soci::session& db, FutureZoom zoom, TimePoint now) {
  count_if_never_counted(db, now);
  PGconn* conn = native_connection(db);
  db::Transaction snapshot(db, db::Transaction::Mode::read_only_snapshot);
  const pq::Result figures = pq::exec(conn, "cannot read the queue figures",
                                      "SELECT prescient.us(counted_at), prescient.us(current_slot)"
                                      "  FROM prescient.queue_figures");
  if (figures.rows() != 1) throw DatabaseError("the queue figures have not been counted");
  const FutureReach reach = future_reach(zoom, figures.time(0, 1), read_settings(db).grid().resolution());
  Future out{.counted_at = figures.time(0, 0), .current_slot = figures.time(0, 1), .span = reach.span, .buckets = {}};
  // The unit each bucket is summed into: every finer bucket within the reach counts.
  const char* unit = zoom == FutureZoom::slot ? "slot" : zoom == FutureZoom::hour ? "hour" : "day";
  const pq::Result rows = pq::exec(
      conn, "cannot read the pending figures",
      "SELECT prescient.us(CASE $1 WHEN 'slot' THEN starts_at ELSE date_trunc($1, starts_at, 'UTC') END) AS at,"
      "       job, sum(checks)"
      "  FROM prescient.pending_figure"
      " WHERE bucket IN ('slot', 'hour', 'day') AND starts_at <= prescient.at_us($2)"
      "   AND ($1 <> 'slot' OR bucket = 'slot')"
      " GROUP BY at, job ORDER BY at, job",
      {unit, pq::micros(reach.through)});
  for (int r = 0; r < rows.rows(); ++r) out.buckets.push_back({rows.time(r, 0), rows.text(r, 1), rows.integer(r, 2)});
  snapshot.commit();
  return out;
}

nlohmann::json to_json(const Future& future) {
  nlohmann::json buckets = nlohmann::json::array();
  for (const auto& b : future.buckets) {
    buckets.push_back({{"starts_at", format_time(b.starts_at)}, {"job", b.job}, {"checks", b.checks}});
  }
  nlohmann::json out{{"counted_at", format_time(future.counted_at)},
                     {"current_slot", format_time(future.current_slot)},
                     {"buckets", buckets}};
  add_span(out, future.span);
  return out;
}

PastDay past_day(soci::session& db, TimePoint now) {
  count_if_never_counted(db, now);
  PGconn* conn = native_connection(db);
  db::Transaction snapshot(db, db::Transaction::Mode::read_only_snapshot);
  const pq::Result figures = pq::exec(conn, "cannot read the queue figures",
                                      "SELECT prescient.us(counted_at) FROM prescient.queue_figures");
  if (figures.rows() != 1) throw DatabaseError("the queue figures have not been counted");
  PastDay out{.counted_at = figures.time(0, 0), .span = past_day_hours(figures.time(0, 0)), .hours = {}};
  const pq::Result rows = pq::exec(conn, "cannot read the history figures",
                                   "SELECT prescient.us(hour), outcome, checks, lateness_p50_seconds::text,"
                                   "       lateness_p99_seconds::text"
                                   "  FROM prescient.finished_figure ORDER BY hour, outcome");
  const auto seconds = [&](int r, int c) -> std::optional<double> {
    const auto text = rows.optional_text(r, c);
    return text ? std::optional(std::stod(*text)) : std::nullopt;
  };
  for (int r = 0; r < rows.rows(); ++r) {
    out.hours.push_back({rows.time(r, 0), parse_outcome(rows.text(r, 1)), rows.integer(r, 2), seconds(r, 3), seconds(r, 4)});
  }
  snapshot.commit();
  return out;
}

nlohmann::json to_json(const PastDay& past) {
  const auto or_null = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  nlohmann::json hours = nlohmann::json::array();
  for (const FinishedHour& h : past.hours) {
    hours.push_back({{"hour", format_time(h.hour)},
                     {"outcome", to_string(h.outcome)},
                     {"checks", h.checks},
                     {"lateness_p50_seconds", or_null(h.lateness_p50_seconds)},
                     {"lateness_p99_seconds", or_null(h.lateness_p99_seconds)}});
  }
  nlohmann::json out{{"counted_at", format_time(past.counted_at)}, {"hours", hours}};
  add_span(out, past.span);
  return out;
}

bool refresh_queue_figures(soci::session& db, TimePoint now, Micros max_age) {
  const pq::Result counted =
      pq::exec(native_connection(db), "cannot count the queue figures",
               "SELECT prescient.refresh_queue_figures(prescient.at_us($1), $2::bigint * interval '1 microsecond')",
               {pq::micros(now), std::to_string(max_age.count())});
  return counted.text(0, 0) == "t";
}

void refresh_queue_figures_before_serving(soci::session& db, TimePoint now) {
  try {
    refresh_queue_figures(db, now);
  } catch (const DatabaseError& e) {
    spdlog::warn("cannot count the queue figures, showing the daemons' when there are: {}", e.what());
  }
}

QueueStats queue_stats(soci::session& db, TimePoint now, int slots_ahead, Micros max_age) {
  if (slots_ahead < 1 || slots_ahead > 1000) {
    throw InvalidInput("slots ahead must be between 1 and 1000, not " + std::to_string(slots_ahead));
  }
  if (max_age != Micros::max()) refresh_queue_figures(db, now, enqueued_since_counted(db) ? Micros{0} : max_age);
  else count_if_never_counted(db, now);
  QueueStats stats;
  stats.now = now;
  PGconn* conn = native_connection(db);
  db::Transaction snapshot(db, db::Transaction::Mode::read_only_snapshot);
  {
    const SlotGrid grid = read_settings(db).grid();
    const pq::Result figures = pq::exec(
        conn, "cannot read the queue figures",
        "SELECT prescient.us(counted_at), count_millis, prescient.us(current_slot), pending, overdue,"
        "       overdue + due, dead_letters, finished_last_hour::text"
        "  FROM prescient.queue_figures");
    if (figures.rows() != 1) throw DatabaseError("the queue figures have not been counted");
    stats.counted_at = figures.time(0, 0);
    stats.count_millis = figures.integer(0, 1);
    stats.current_slot = figures.time(0, 2);
    stats.pending = figures.integer(0, 3);
    stats.overdue = figures.integer(0, 4);
    stats.due_now = figures.integer(0, 5);
    stats.dead_letters = figures.integer(0, 6);
    const nlohmann::json last_hour = nlohmann::json::parse(figures.text(0, 7));
    for (const auto& [outcome, n] : last_hour.items()) {
      stats.finished_last_hour[parse_outcome(outcome)] = n.get<long long>();
    }

    const pq::Result day = pq::exec(conn, "cannot read the outcomes of the last day",
                                    "SELECT outcome, sum(checks) FROM prescient.finished_figure GROUP BY outcome");
    stats.finished_last_day = by_outcome(day);

    const pq::Result ahead = pq::exec(
        conn, "cannot read the next slots",
        "SELECT prescient.us(starts_at), sum(checks) FROM prescient.pending_figure"
        " WHERE bucket = 'slot' AND starts_at <= prescient.at_us($1) GROUP BY starts_at",
        {pq::micros(stats.current_slot + grid.resolution() * slots_ahead)});
    std::map<std::int64_t, long long> by_slot;
    for (int r = 0; r < ahead.rows(); ++r) by_slot[ahead.integer(r, 0)] = ahead.integer(r, 1);
    for (int i = 1; i <= slots_ahead; ++i) {
      const TimePoint slot = stats.current_slot + grid.resolution() * i;
      const auto found = by_slot.find(to_unix_micros(slot));
      stats.next_slots.push_back({slot, found == by_slot.end() ? 0 : found->second});
    }

    const pq::Result paused = pq::exec(
        conn, "cannot read the paused job classes",
        "SELECT p.job, prescient.us(p.paused_at), p.paused_by,"
        "       (SELECT coalesce(sum(checks), 0) FROM prescient.pending_figure f WHERE f.job = p.job)"
        "  FROM prescient.paused_job p ORDER BY p.job");
    for (int r = 0; r < paused.rows(); ++r) {
      stats.paused.push_back({paused.text(r, 0), paused.time(r, 1), paused.text(r, 2), paused.integer(r, 3)});
    }

    stats.deferrals = db::read_flow_figures(conn, 20);

    const pq::Result oldest = pq::exec(conn, "cannot find the oldest overdue check",
                                       "SELECT id, job, prescient.us(next_check_at) FROM prescient.future_job"
                                       " WHERE next_check_at < prescient.at_us($1) ORDER BY next_check_at, id LIMIT 1",
                                       {pq::micros(grid.floor(now))});
    if (oldest.rows() == 1) {
      stats.oldest_overdue = QueueStats::Oldest{oldest.integer(0, 0), oldest.text(0, 1), oldest.time(0, 2)};
    }
  }
  snapshot.commit();
  return stats;
}

std::optional<PendingByHorizon> pending_by_horizon(soci::session& db) {
  const pq::Result row = pq::exec(
      native_connection(db), "cannot read the queue figures",
      "SELECT prescient.us(counted_at), overdue, due, next_hour, next_day, next_week FROM prescient.queue_figures");
  if (row.rows() == 0) return std::nullopt;
  return PendingByHorizon{.counted_at = row.time(0, 0),
                          .overdue = row.integer(0, 1),
                          .due = row.integer(0, 2),
                          .next_hour = row.integer(0, 3),
                          .next_day = row.integer(0, 4),
                          .next_week = row.integer(0, 5)};
}

}  // namespace prescient
