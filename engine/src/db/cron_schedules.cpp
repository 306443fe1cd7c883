#include "db/cron_schedules.hpp"

#include "core/text_rules.hpp"
#include "db/connection.hpp"
#include "db/pq.hpp"
#include "prescient/time_text.hpp"

namespace prescient::db {

using namespace prescient::core;
namespace {

// The last occurrence and the run count: in the pending check's payload while there is one (the runner
// writes them there with each firing), else where a pause or an end left them.
constexpr const char* kSelectSchedules =
    "SELECT s.id, s.spec, s.time_zone, s.job, s.payload::text, s.deadline_seconds, s.catch_up, s.version,"
    " prescient.us(s.anchor_at), prescient.us(s.created_at), prescient.us(s.updated_at),"
    " coalesce((f.payload->>'last_us')::bigint, prescient.us(s.last_occurrence_at)), prescient.us(f.next_check_at),"
    " prescient.us(s.paused_at), s.invalid_reason, s.window_seconds, s.jitter_seconds, s.overlap,"
    " prescient.us(s.start_at), prescient.us(s.end_at), s.max_runs,"
    " coalesce((f.payload->>'runs')::integer, s.run_count), prescient.us(s.ended_at), s.ended_reason, s.pause_note,"
    " s.priority, s.pause_after_failures, s.failed_in_a_row, s.last_failure, s.dst_repeated, s.dst_missing,"
    " s.calendar, s.when_closed"
    " FROM prescient.cron_schedule s"
    " LEFT JOIN prescient.future_job f ON f.job_key = 'cron:' || s.id";

std::vector<ScheduleDefinition> schedules_from(const pq::Result& rows) {
  std::vector<ScheduleDefinition> out(rows.rows());
  for (int r = 0; r < rows.rows(); ++r) {
    ScheduleDefinition& d = out[r];
    d.id = rows.text(r, 0);
    d.spec = rows.text(r, 1);
    d.time_zone = rows.text(r, 2);
    d.job = rows.text(r, 3);
    d.payload = readable_payload(rows.text(r, 4));
    if (const auto deadline = rows.optional_integer(r, 5)) d.deadline = std::chrono::seconds{*deadline};
    d.catch_up = rows.text(r, 6);
    d.version = static_cast<int>(rows.integer(r, 7));
    d.anchor_at = rows.time(r, 8);
    d.created_at = rows.time(r, 9);
    d.updated_at = rows.time(r, 10);
    d.last_occurrence_at = rows.optional_time(r, 11);
    d.next_check_at = rows.optional_time(r, 12);
    d.paused_at = rows.optional_time(r, 13);
    d.invalid_reason = rows.optional_text(r, 14);
    if (const auto window = rows.optional_integer(r, 15)) d.window = std::chrono::seconds{*window};
    if (const auto jitter = rows.optional_integer(r, 16)) d.jitter = std::chrono::seconds{*jitter};
    d.overlap = rows.text(r, 17);
    d.start_at = rows.optional_time(r, 18);
    d.end_at = rows.optional_time(r, 19);
    if (const auto max_runs = rows.optional_integer(r, 20)) d.max_runs = static_cast<int>(*max_runs);
    d.run_count = static_cast<int>(rows.integer(r, 21));
    d.ended_at = rows.optional_time(r, 22);
    d.ended_reason = rows.optional_text(r, 23);
    d.pause_note = rows.optional_text(r, 24);
    d.priority = static_cast<int>(rows.integer(r, 25));
    if (const auto n = rows.optional_integer(r, 26)) d.pause_after_failures = static_cast<int>(*n);
    d.failed_in_a_row = static_cast<int>(rows.integer(r, 27));
    d.last_failure = rows.optional_text(r, 28);
    d.dst_repeated = rows.text(r, 29);
    d.dst_missing = rows.text(r, 30);
    d.calendar = rows.optional_text(r, 31);
    d.when_closed = rows.text(r, 32);
  }
  return out;
}

std::optional<std::string> optional_micros(const std::optional<TimePoint>& t) {
  return t ? std::optional(pq::micros(*t)) : std::nullopt;
}

// The options of cron_add_arrays (p_options) a definition has, or nothing: most schedules have none.
std::optional<std::string> options_of(const ScheduleDefinition& d) {
  nlohmann::json options = nlohmann::json::object();
  if (d.overlap != "allow") options["overlap"] = d.overlap;
  if (d.start_at) options["start_at"] = format_time(*d.start_at);
  if (d.end_at) options["end_at"] = format_time(*d.end_at);
  if (d.max_runs) options["max_runs"] = *d.max_runs;
  if (d.priority != ScheduleDefinition{}.priority) options["priority"] = d.priority;
  if (d.pause_after_failures) options["pause_after_failures"] = *d.pause_after_failures;
  if (d.dst_repeated != ScheduleDefinition{}.dst_repeated) options["dst_repeated"] = d.dst_repeated;
  if (d.dst_missing != ScheduleDefinition{}.dst_missing) options["dst_missing"] = d.dst_missing;
  if (d.calendar) options["calendar"] = *d.calendar;
  if (d.when_closed != ScheduleDefinition{}.when_closed) options["when_closed"] = d.when_closed;
  return options.empty() ? std::nullopt : std::optional(options.dump());
}

}  // namespace

namespace {

// The items of a call as cron_add_arrays and cron_problems take them: one array per field, the options
// (overlap, start_at, end_at, max_runs, priority, pause_after_failures, dst_repeated, dst_missing, calendar,
// when_closed) sent only when some item has them.
struct ScheduleArrays {
  pq::Param ids, specs, zones, jobs, payloads, catch_ups, deadlines, windows, jitters, options;
};

ScheduleArrays schedule_arrays(std::span<const ScheduleDefinition> items) {
  std::vector<std::optional<std::string>> ids, specs, zones, jobs, payloads, catch_ups, options;
  bool any_options = false;
  std::vector<std::optional<std::int64_t>> deadlines, windows, jitters;
  const auto seconds = [](const std::optional<std::chrono::seconds>& d) {
    return d ? std::optional<std::int64_t>(d->count()) : std::nullopt;
  };
  for (const ScheduleDefinition& d : items) {
    ids.emplace_back(d.id);
    specs.emplace_back(d.spec);
    zones.emplace_back(d.time_zone);
    jobs.emplace_back(d.job);
    payloads.emplace_back(d.payload.dump());
    catch_ups.emplace_back(d.catch_up);
    deadlines.push_back(seconds(d.deadline));
    windows.push_back(seconds(d.window));
    jitters.push_back(seconds(d.jitter));
    options.push_back(options_of(d));
    any_options = any_options || options.back().has_value();
  }
  return {.ids = pq::text_array(ids),
          .specs = pq::text_array(specs),
          .zones = pq::text_array(zones),
          .jobs = pq::text_array(jobs),
          .payloads = pq::text_array(payloads),
          .catch_ups = pq::text_array(catch_ups),
          .deadlines = pq::optional_integer_array(deadlines),
          .windows = pq::optional_integer_array(windows),
          .jitters = pq::optional_integer_array(jitters),
          .options = any_options ? pq::text_array(options) : pq::Param(std::nullopt)};
}

}  // namespace

int add_schedules(soci::session& db, std::span<const ScheduleDefinition> items,
                  std::span<const std::optional<TimePoint>> first_check_at, TimePoint now) {
  std::vector<std::optional<std::int64_t>> firsts;
  firsts.reserve(first_check_at.size());
  for (const auto& first : first_check_at) {
    firsts.push_back(first ? std::optional(to_unix_micros(*first)) : std::nullopt);
  }
  ScheduleArrays a = schedule_arrays(items);
  const pq::Result added = pq::exec(
      native_connection(db), "cannot add schedules",
      "SELECT prescient.cron_add_arrays($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],"
      " $7::bigint[], (SELECT array_agg(prescient.at_us(u) ORDER BY n) FROM unnest($8::bigint[]) WITH ORDINALITY"
      " AS f(u, n)), current_user, prescient.at_us($9), $10::bigint[], $11::bigint[], $12::text[]::jsonb[])",
      {std::move(a.ids), std::move(a.specs), std::move(a.zones), std::move(a.jobs), std::move(a.payloads),
       std::move(a.catch_ups), std::move(a.deadlines), pq::optional_integer_array(firsts), pq::micros(now),
       std::move(a.windows), std::move(a.jitters), std::move(a.options)});
  return static_cast<int>(added.integer(0, 0));
}

std::vector<std::optional<std::string>> schedule_definition_problems(soci::session& db,
                                                                     std::span<const ScheduleDefinition> items,
                                                                     TimePoint now) {
  std::vector<std::optional<std::string>> problems(items.size());
  if (items.empty()) return problems;
  ScheduleArrays a = schedule_arrays(items);
  const pq::Result rows = pq::exec(
      native_connection(db), "cannot judge the schedules",
      "SELECT n, problem FROM prescient.cron_problems($1::text[], $2::text[], $3::text[], $4::text[], $5::text[],"
      " $6::text[], $7::bigint[], prescient.at_us($8), $9::bigint[], $10::bigint[], $11::text[]::jsonb[])",
      {std::move(a.ids), std::move(a.specs), std::move(a.zones), std::move(a.jobs), std::move(a.payloads),
       std::move(a.catch_ups), std::move(a.deadlines), pq::micros(now), std::move(a.windows), std::move(a.jitters),
       std::move(a.options)});
  for (int r = 0; r < rows.rows(); ++r) problems.at(rows.integer(r, 0) - 1) = rows.text(r, 1);
  return problems;
}

void lock_schedule(soci::session& db, const std::string& id) {
  pq::exec(native_connection(db), "cannot lock the schedule",
           "SELECT 1 FROM prescient.cron_schedule WHERE id = $1 FOR UPDATE", {id});
}

int update_schedule(soci::session& db, const std::string& id, const nlohmann::json& changes,
                    std::optional<int> expected_version, std::optional<TimePoint> first_check_at, TimePoint now) {
  return static_cast<int>(
      pq::exec(native_connection(db), "cannot update the schedule",
               "SELECT prescient.cron_update($1, $2::jsonb, $3::integer, prescient.at_us($4::bigint),"
               " prescient.at_us($5))",
               {id, changes.dump(),
                expected_version ? std::optional(std::to_string(*expected_version)) : std::nullopt,
                optional_micros(first_check_at), pq::micros(now)})
          .integer(0, 0));
}

void remove_schedule(soci::session& db, const std::string& id, const std::string& by, TimePoint now) {
  pq::exec(native_connection(db), "cannot remove the schedule", "SELECT prescient.cron_remove($1, $2, prescient.at_us($3))",
           {id, by, pq::micros(now)});
}

bool pause_schedule(soci::session& db, const std::string& id, const std::string& by,
                    const std::optional<std::string>& note, TimePoint now) {
  return pq::exec(native_connection(db), "cannot pause the schedule",
                  "SELECT prescient.cron_pause($1, $2, prescient.at_us($3), $4)::int", {id, by, pq::micros(now), note})
             .integer(0, 0) == 1;
}

std::int64_t backfill_schedule(soci::session& db, const std::string& id, TimePoint from, TimePoint to,
                               const std::string& by, TimePoint now) {
  return pq::exec(native_connection(db), "cannot backfill the schedule",
                  "SELECT prescient.cron_backfill($1, prescient.at_us($2), prescient.at_us($3), $4, prescient.at_us($5))",
                  {id, pq::micros(from), pq::micros(to), by, pq::micros(now)})
      .integer(0, 0);
}

std::string trigger_schedule(soci::session& db, const std::string& id, const std::string& by, TimePoint now) {
  return pq::exec(native_connection(db), "cannot trigger the schedule",
                  "SELECT prescient.cron_trigger($1, $2, prescient.at_us($3))", {id, by, pq::micros(now)})
      .text(0, 0);
}

bool resume_schedule(soci::session& db, const std::string& id, const std::string& by, TimePoint now) {
  return pq::exec(native_connection(db), "cannot resume the schedule",
                  "SELECT prescient.cron_resume($1, $2, prescient.at_us($3))::int", {id, by, pq::micros(now)})
             .integer(0, 0) == 1;
}

std::vector<ScheduleDefinition> read_schedules(soci::session& db, const ScheduleFilter& filter) {
  return schedules_from(pq::exec(
      native_connection(db), "cannot read schedules",
      std::string(kSelectSchedules) +
          " WHERE ($1::text IS NULL OR s.id > $1) AND (NOT $2::boolean OR s.paused_at IS NOT NULL)"
          "   AND (NOT $3::boolean OR s.invalid_reason IS NOT NULL) AND ($4::text IS NULL OR s.job = $4)"
          " ORDER BY s.id LIMIT $5",
      {filter.after, filter.paused ? "true" : "false", filter.invalid ? "true" : "false", filter.job,
       std::to_string(filter.limit)}));
}

std::optional<ScheduleDefinition> read_schedule(soci::session& db, const std::string& id) {
  auto found = schedules_from(
      pq::exec(native_connection(db), "cannot read the schedule", std::string(kSelectSchedules) + " WHERE s.id = $1", {id}));
  if (found.empty()) return std::nullopt;
  return std::move(found.front());
}

std::vector<Schedules::FiredEvent> recent_schedule_events(soci::session& db, const std::string& id, int limit) {
  const pq::Result rows = pq::exec(native_connection(db), "cannot read the schedule's events",
                                   "SELECT id, prescient.us(occurred_at), prescient.us(emitted_at) FROM prescient.event"
                                   " WHERE source = $1 ORDER BY occurred_at DESC, seq DESC LIMIT $2",
                                   {id, std::to_string(limit)});
  std::vector<Schedules::FiredEvent> out;
  for (int r = 0; r < rows.rows(); ++r) out.push_back({rows.text(r, 0), rows.time(r, 1), rows.time(r, 2)});
  return out;
}

}  // namespace prescient::db
