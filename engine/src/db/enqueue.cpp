#include "db/enqueue.hpp"

#include <algorithm>

#include "db/transaction.hpp"

#include "db/connection.hpp"
#include "db/pq.hpp"
#include "prescient/errors.hpp"
#include "prescient/time_text.hpp"

namespace prescient::db {
namespace {

constexpr const char* kScheduledColumns =
    "id, job_key, prescient.us(next_check_at), prescient.us(first_check_at), status";

Scheduled::Status parse_status(const std::string& text) {
  if (text == "created") return Scheduled::Status::created;
  if (text == "replaced") return Scheduled::Status::replaced;
  if (text == "kept") return Scheduled::Status::kept;
  if (text == "conflict") return Scheduled::Status::conflict;
  if (text == "debounced") return Scheduled::Status::debounced;
  if (text == "collected") return Scheduled::Status::collected;
  if (text == "deduplicated") return Scheduled::Status::deduplicated;
  throw DatabaseError("unexpected schedule status '" + text + "' from the database");
}

// Reads the columns of kScheduledColumns starting at `col`.
Scheduled scheduled_from(const pq::Result& rows, int row, int col) {
  return Scheduled{.id = rows.integer(row, col),
                   .job_key = rows.optional_text(row, col + 1),
                   .next_check_at = rows.optional_time(row, col + 2),
                   .first_check_at = rows.optional_time(row, col + 3),
                   .status = parse_status(rows.text(row, col + 4))};
}

// Outcomes as a text[] parameter; none: NULL (the function's default).
pq::Param outcomes_of(const std::vector<Outcome>& outcomes) {
  if (outcomes.empty()) return std::nullopt;
  std::vector<std::optional<std::string>> names;
  for (const Outcome& o : outcomes) names.emplace_back(to_string(o));
  return pq::text_array(names);
}

}  // namespace

namespace {

// A check's own policy (prescient.set_check_policy) for each scheduled check that was written (created,
// replaced, debounced) and whose request carries one, in the open transaction.
void set_own_policies(PGconn* conn, std::span<const ScheduleRequest> requests, std::span<const Scheduled> results) {
  std::vector<std::int64_t> ids;
  std::vector<std::optional<std::int64_t>> max_checks, max_attempts, backoff, backoff_max;
  const auto number = [](const auto& value) {
    return value ? std::optional<std::int64_t>(static_cast<std::int64_t>(*value)) : std::nullopt;
  };
  const auto seconds = [](const auto& value) {
    return value ? std::optional<std::int64_t>(value->count()) : std::nullopt;
  };
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const JobPolicy& own = requests[i].policy;
    const Scheduled::Status status = results[i].status;
    const bool written = status == Scheduled::Status::created || status == Scheduled::Status::replaced ||
                         status == Scheduled::Status::debounced;
    if (!written || own == JobPolicy{}) continue;
    ids.push_back(results[i].id);
    max_checks.push_back(number(own.max_checks));
    max_attempts.push_back(number(own.max_attempts));
    backoff.push_back(seconds(own.backoff));
    backoff_max.push_back(seconds(own.backoff_max));
  }
  if (ids.empty()) return;
  pq::exec(conn, "cannot set the checks' own policies",
           "SELECT prescient.set_check_policy(id, c::integer, a::integer, b * interval '1 second',"
           "                                  m * interval '1 second')"
           "  FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[]) AS u(id, c, a, b, m)",
           {pq::integer_array(ids), pq::optional_integer_array(max_checks), pq::optional_integer_array(max_attempts),
            pq::optional_integer_array(backoff), pq::optional_integer_array(backoff_max)});
}

bool any_own_policy(std::span<const ScheduleRequest> requests) {
  return std::any_of(requests.begin(), requests.end(), [](const ScheduleRequest& r) { return r.policy != JobPolicy{}; });
}

}  // namespace

Scheduled schedule_one(soci::session& db, const ScheduleRequest& request, TimePoint at, const std::string& by,
                       TimePoint now, bool allow_unknown_class) {
  // With the check's own policy: both in one transaction (or the caller's), so the check is never pending
  // without it.
  std::optional<Transaction> both;
  if (request.policy != JobPolicy{}) both.emplace(db);
  const pq::Result rows = pq::exec(
      native_connection(db), "cannot schedule the check",
      std::string("SELECT ") + kScheduledColumns +
          " FROM prescient.schedule($1, $2, $3, $4::timestamptz, $5, $6, $7::jsonb, $8, $9, $10::timestamptz,"
           " $11::interval, $12::interval, $13::interval, coalesce($14::text[], '{done}'), $15::boolean,"
           " $16::integer, $17, $18, $19, $20)",
      {request.job, request.entity_name, request.entity_key, format_time(at), request.job_key, request.group_key,
       request.payload.dump(), by, std::string(to_string(request.on_conflict)), format_time(now),
       pq::interval_text(request.window), pq::interval_text(request.max_wait), pq::interval_text(request.dedupe_for),
       outcomes_of(request.dedupe_outcomes), allow_unknown_class ? "true" : "false", pq::number_text(request.priority),
       request.traceparent, request.tracestate, request.calendar, request.business_delay});
  if (rows.rows() != 1) throw DatabaseError("prescient.schedule returned " + std::to_string(rows.rows()) + " rows");
  const Scheduled scheduled = scheduled_from(rows, 0, 0);
  if (both) {
    set_own_policies(native_connection(db), std::span(&request, 1), std::span(&scheduled, 1));
    both->commit();
  }
  return scheduled;
}

namespace {

// The items of a call as schedule_arrays and schedule_problems take them: one array per field, in binary
// (the server reads them far faster than a JSON array of objects); an optional field is sent only when
// some request has it, so the common call stays as it was.
struct ItemArrays {
  pq::Param job, entity_name, entity_key, at, job_key, group_key, payload, enqueued_by, on_conflict, window, max_wait,
      dedupe_for, dedupe_outcomes, priority, traceparent, tracestate, calendar, business_delay;

  // $1 to $13 of both statements, then `now` as $14, the priorities as $15, the trace context as $16, $17 and
  // business time as $18, $19.
  pq::Params params(TimePoint now) && {
    return {std::move(job), std::move(entity_name), std::move(entity_key), std::move(at), std::move(job_key),
            std::move(group_key), std::move(payload), std::move(enqueued_by), std::move(on_conflict),
            std::move(window), std::move(max_wait), std::move(dedupe_for), std::move(dedupe_outcomes),
            format_time(now), std::move(priority), std::move(traceparent), std::move(tracestate),
            std::move(calendar), std::move(business_delay)};
  }
};

ItemArrays item_arrays(std::span<const ScheduleRequest> requests, std::span<const TimePoint> at, const std::string& by) {
  std::vector<std::optional<std::string>> jobs, entities, entity_keys, keys, groups, payloads, bys, conflicts, windows,
      max_waits, dedupe_fors, traceparents, tracestates, calendars, business_delays;
  std::vector<std::optional<std::int64_t>> priorities;
  bool any_window = false, any_once = false, any_priority = false, any_trace = false, any_business = false;
  std::vector<Outcome> dedupe_outcomes;  // one set for the call (Client::schedule_many checks they agree)
  for (auto* column : {&jobs, &entities, &entity_keys, &keys, &groups, &payloads, &bys, &conflicts, &windows, &max_waits,
                       &dedupe_fors}) {
    column->reserve(requests.size());
  }
  for (const ScheduleRequest& request : requests) {
    jobs.emplace_back(request.job);
    entities.emplace_back(request.entity_name);
    entity_keys.emplace_back(request.entity_key);
    keys.push_back(request.job_key);
    groups.push_back(request.group_key);
    payloads.emplace_back(request.payload.dump());
    bys.emplace_back(request.by.value_or(by));
    conflicts.emplace_back(to_string(request.on_conflict));
    windows.push_back(pq::interval_text(request.window));
    any_window = any_window || request.window.has_value();
    max_waits.push_back(pq::interval_text(request.max_wait));
    dedupe_fors.push_back(pq::interval_text(request.dedupe_for));
    any_once = any_once || request.max_wait || request.dedupe_for;
    if (request.dedupe_for && !request.dedupe_outcomes.empty()) dedupe_outcomes = request.dedupe_outcomes;
    priorities.push_back(request.priority);
    any_priority = any_priority || request.priority.has_value();
    traceparents.push_back(request.traceparent);
    tracestates.push_back(request.tracestate);
    any_trace = any_trace || request.traceparent || request.tracestate;
    calendars.push_back(request.calendar);
    business_delays.push_back(request.business_delay);
    any_business = any_business || request.calendar || request.business_delay;
  }
  const auto sent_if = [](bool any, const std::vector<std::optional<std::string>>& column) {
    return any ? pq::text_array(column) : pq::Param(std::nullopt);
  };
  return {.job = pq::text_array(jobs), .entity_name = pq::text_array(entities),
          .entity_key = pq::text_array(entity_keys), .at = pq::time_array(at), .job_key = pq::text_array(keys),
          .group_key = pq::text_array(groups), .payload = pq::text_array(payloads),
          .enqueued_by = pq::text_array(bys), .on_conflict = pq::text_array(conflicts),
          .window = sent_if(any_window, windows), .max_wait = sent_if(any_once, max_waits),
          .dedupe_for = sent_if(any_once, dedupe_fors), .dedupe_outcomes = outcomes_of(dedupe_outcomes),
          .priority = any_priority ? pq::optional_integer_array(priorities) : pq::Param(std::nullopt),
          .traceparent = sent_if(any_trace, traceparents), .tracestate = sent_if(any_trace, tracestates),
          .calendar = sent_if(any_business, calendars), .business_delay = sent_if(any_business, business_delays)};
}

}  // namespace

std::vector<Scheduled> schedule_arrays(soci::session& db, std::span<const ScheduleRequest> requests,
                                       std::span<const TimePoint> at, const std::string& by, TimePoint now,
                                       bool report_conflicts, bool allow_unknown_class) {
  pq::Params params = item_arrays(requests, at, by).params(now);
  params.emplace_back(report_conflicts ? "true" : "false");
  params.emplace_back(allow_unknown_class ? "true" : "false");
  std::optional<Transaction> both;  // with checks' own policies: one transaction, as in schedule_one
  if (any_own_policy(requests)) both.emplace(db);
  const pq::Result rows = pq::exec(
      native_connection(db), "cannot schedule the checks",
      std::string("SELECT n, ") + kScheduledColumns +
          " FROM prescient.schedule_arrays($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::text[],"
          " $6::text[], $7::text[], $8::text[], $9::text[], p_window => $10::text[]::interval[],"
          " p_max_wait => $11::text[]::interval[], p_dedupe_for => $12::text[]::interval[],"
          " p_dedupe_outcomes => coalesce($13::text[], '{done}'), p_now => $14::timestamptz,"
          " p_priority => $15::bigint[]::integer[], p_traceparent => $16::text[], p_tracestate => $17::text[],"
          " p_calendar => $18::text[], p_business_delay => $19::text[],"
          " p_report_conflicts => $20::boolean, p_allow_unknown_class => $21::boolean)",
      params);
  std::vector<Scheduled> results(requests.size());
  for (int r = 0; r < rows.rows(); ++r) results.at(rows.integer(r, 0) - 1) = scheduled_from(rows, r, 1);
  if (both) {
    set_own_policies(native_connection(db), requests, results);
    both->commit();
  }
  return results;
}

std::vector<std::optional<std::string>> schedule_problems(soci::session& db, std::span<const ScheduleRequest> requests,
                                                          std::span<const TimePoint> at, const std::string& by,
                                                          TimePoint now, bool allow_unknown_class) {
  std::vector<std::optional<std::string>> problems(requests.size());
  if (requests.empty()) return problems;
  // The arguments of schedule_arrays, less p_report_conflicts.
  pq::Params params = item_arrays(requests, at, by).params(now);
  params.emplace_back(allow_unknown_class ? "true" : "false");
  const pq::Result rows = pq::exec(
      native_connection(db), "cannot judge the checks",
      "SELECT n, problem FROM prescient.schedule_problems($1::text[], $2::text[], $3::text[], $4::timestamptz[],"
      " $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], p_window => $10::text[]::interval[],"
      " p_max_wait => $11::text[]::interval[], p_dedupe_for => $12::text[]::interval[],"
      " p_dedupe_outcomes => coalesce($13::text[], '{done}'), p_now => $14::timestamptz,"
      " p_priority => $15::bigint[]::integer[], p_traceparent => $16::text[], p_tracestate => $17::text[],"
      " p_calendar => $18::text[], p_business_delay => $19::text[], p_allow_unknown_class => $20::boolean)",
      std::move(params));
  for (int r = 0; r < rows.rows(); ++r) problems.at(rows.integer(r, 0) - 1) = rows.text(r, 1);
  return problems;
}

std::optional<std::int64_t> cancel(soci::session& db, std::optional<std::int64_t> id,
                                   std::optional<std::string> job_key, const std::string& by, TimePoint now) {
  const pq::Result rows = pq::exec(native_connection(db), "cannot cancel the check",
                                   "SELECT prescient.cancel($1::bigint, $2, $3, $4::timestamptz)",
                                   {pq::number_text(id), std::move(job_key), by, format_time(now)});
  return rows.optional_integer(0, 0);
}

std::optional<Rescheduled> reschedule(soci::session& db, TimePoint at, std::optional<std::int64_t> id,
                                      std::optional<std::string> job_key, TimePoint now) {
  const pq::Result rows = pq::exec(native_connection(db), "cannot reschedule the check",
                                   "SELECT id, job_key, prescient.us(next_check_at)"
                                   " FROM prescient.reschedule($1::timestamptz, $2::bigint, $3, $4::timestamptz)",
                                   {format_time(at), pq::number_text(id), std::move(job_key), format_time(now)});
  if (rows.rows() == 0) return std::nullopt;
  return Rescheduled{.id = rows.integer(0, 0), .job_key = rows.optional_text(0, 1), .next_check_at = rows.time(0, 2)};
}

}  // namespace prescient::db
