#include "prescient/client.hpp"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>

#include "db/pq.hpp"
#include "db/connection.hpp"
#include "prescient/database.hpp"
#include "prescient/duration.hpp"
#include "prescient/errors.hpp"
#include "prescient/registry.hpp"
#include "prescient/settings.hpp"
#include "core/text_rules.hpp"
#include "prescient/time_text.hpp"

namespace prescient {
namespace {

const SystemClock kSystemClock;

constexpr const char* kScheduledColumns =
    "id, job_key, prescient.us(next_check_at), prescient.us(first_check_at), status";

Scheduled::Status parse_status(const std::string& text) {
  if (text == "created") return Scheduled::Status::created;
  if (text == "replaced") return Scheduled::Status::replaced;
  if (text == "kept") return Scheduled::Status::kept;
  if (text == "conflict") return Scheduled::Status::conflict;
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

std::optional<std::string> text_of(std::optional<std::int64_t> value) {
  return value ? std::optional(std::to_string(*value)) : std::nullopt;
}

}  // namespace

OnConflict parse_on_conflict(std::string_view text) {
  if (text == "error") return OnConflict::error;
  if (text == "replace") return OnConflict::replace;
  if (text == "keep") return OnConflict::keep;
  throw InvalidInput("invalid on-conflict policy '" + std::string(text) + "': use error, replace or keep");
}

std::string_view to_string(OnConflict policy) {
  switch (policy) {
    case OnConflict::error: return "error";
    case OnConflict::replace: return "replace";
    case OnConflict::keep: return "keep";
  }
  return "error";
}

std::string_view to_string(Scheduled::Status status) {
  switch (status) {
    case Scheduled::Status::created: return "created";
    case Scheduled::Status::replaced: return "replaced";
    case Scheduled::Status::kept: return "kept";
    case Scheduled::Status::conflict: return "conflict";
  }
  return "created";
}

std::string current_os_user() {
  if (const passwd* pw = ::getpwuid(::geteuid()); pw != nullptr && pw->pw_name != nullptr) return pw->pw_name;
  if (const char* user = std::getenv("USER"); user != nullptr && *user != '\0') return user;
  return "uid:" + std::to_string(::geteuid());
}

Client::Client(soci::session& db, ClientOptions options)
    : db_(db),
      clock_(options.clock ? options.clock : &kSystemClock),
      registry_(options.registry),
      enqueued_by_(options.enqueued_by.empty() ? current_os_user() : std::move(options.enqueued_by)) {}

const Settings& Client::settings() {
  if (!settings_) settings_ = read_settings(db_);
  return *settings_;
}

TimePoint Client::time_of(const ScheduleRequest& request, TimePoint now) const {
  if (request.at.has_value() == request.in.has_value()) {
    throw InvalidInput("give exactly one of a time (at) and a delay (in)");
  }
  if (request.at) return *request.at;
  if (*request.in < std::chrono::seconds{0}) {
    throw InvalidInput("the delay " + format_duration(*request.in) + " is negative");
  }
  return now + *request.in;
}

std::optional<std::string> Client::problem_with(const ScheduleRequest& request, TimePoint now) {
  const auto empty = [](const std::optional<std::string>& s) { return s && s->empty(); };
  if (request.job.empty()) return "the job class is empty";
  if (request.entity_name.empty()) return "the entity name is empty";
  if (request.entity_key.empty()) return "the entity key is empty";
  if (empty(request.job_key)) return "the job key is empty (leave it out for a check without a key)";
  if (empty(request.group_key)) return "the group key is empty (leave it out for a check without a group)";
  if (empty(request.by)) return "enqueued_by is empty";
  const auto view = [](const std::optional<std::string>& s) {
    return s ? std::optional<std::string_view>(*s) : std::nullopt;
  };
  const std::pair<const char*, std::optional<std::string_view>> names[] = {
      {"the job class", request.job},       {"the entity name", request.entity_name},
      {"the entity key", request.entity_key}, {"the job key", view(request.job_key)},
      {"the group key", view(request.group_key)}, {"enqueued_by", view(request.by)}};
  for (const auto& [what, value] : names) {
    if (value) {
      if (auto problem = name_problem(what, *value)) return problem;
    }
  }
  if (registry_ != nullptr && !registry_->contains(request.job)) return registry_->unknown_class_message(request.job);
  if (auto problem = payload_text_problem(request.payload)) return problem;
  if (!request.payload.is_object()) return "the payload must be a JSON object, not " + request.payload.dump();
  TimePoint at;
  try {
    at = time_of(request, now);
  } catch (const InvalidInput& e) {
    return e.what();
  }
  if (at > now + settings().max_horizon) {
    return format_time(at) + " is beyond the horizon: at most " + format_duration(settings().max_horizon) +
           " after now (" + format_time(now) + ")";
  }
  return std::nullopt;
}

Scheduled Client::schedule(const ScheduleRequest& request) {
  const TimePoint now = clock_->now();
  if (const auto problem = problem_with(request, now)) throw InvalidInput(*problem);
  const pq::Result rows = pq::exec(
      native_connection(db_), "cannot schedule the check",
      std::string("SELECT ") + kScheduledColumns +
          " FROM prescient.schedule($1, $2, $3, $4::timestamptz, $5, $6, $7::jsonb, $8, $9, $10::timestamptz)",
      {request.job, request.entity_name, request.entity_key, format_time(time_of(request, now)), request.job_key,
       request.group_key, request.payload.dump(), request.by.value_or(enqueued_by_),
       std::string(to_string(request.on_conflict)), format_time(now)});
  if (rows.rows() != 1) throw DatabaseError("prescient.schedule returned " + std::to_string(rows.rows()) + " rows");
  return scheduled_from(rows, 0, 0);
}

std::vector<Scheduled> Client::schedule_many(std::span<const ScheduleRequest> requests, bool report_conflicts) {
  if (requests.empty()) return {};
  const TimePoint now = clock_->now();
  // One array per field (prescient.schedule_arrays), in binary: the server reads them far faster than a
  // JSON array of objects.
  std::vector<std::optional<std::string>> jobs, entities, entity_keys, keys, groups, payloads, bys, conflicts;
  for (auto* column : {&jobs, &entities, &entity_keys, &keys, &groups, &payloads, &bys, &conflicts}) {
    column->reserve(requests.size());
  }
  std::vector<TimePoint> times;
  times.reserve(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const ScheduleRequest& request = requests[i];
    if (const auto problem = problem_with(request, now)) {
      throw InvalidInput("request " + std::to_string(i + 1) + ": " + *problem);
    }
    jobs.emplace_back(request.job);
    entities.emplace_back(request.entity_name);
    entity_keys.emplace_back(request.entity_key);
    times.push_back(time_of(request, now));
    keys.push_back(request.job_key);
    groups.push_back(request.group_key);
    payloads.emplace_back(request.payload.dump());
    bys.emplace_back(request.by.value_or(enqueued_by_));
    conflicts.emplace_back(to_string(request.on_conflict));
  }
  const pq::Result rows = pq::exec(
      native_connection(db_), "cannot schedule the checks",
      std::string("SELECT n, ") + kScheduledColumns +
          " FROM prescient.schedule_arrays($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::text[],"
          " $6::text[], $7::text[], $8::text[], $9::text[], p_now => $10::timestamptz,"
          " p_report_conflicts => $11::boolean)",
      {pq::text_array(jobs), pq::text_array(entities), pq::text_array(entity_keys), pq::time_array(times),
       pq::text_array(keys), pq::text_array(groups), pq::text_array(payloads), pq::text_array(bys),
       pq::text_array(conflicts), format_time(now), std::string(report_conflicts ? "true" : "false")});
  std::vector<Scheduled> results(requests.size());
  for (int r = 0; r < rows.rows(); ++r) results.at(rows.integer(r, 0) - 1) = scheduled_from(rows, r, 1);
  return results;
}

std::optional<std::int64_t> Client::cancel(std::optional<std::int64_t> id, std::optional<std::string> job_key,
                                           std::optional<std::string> by) {
  const pq::Result rows =
      pq::exec(native_connection(db_), "cannot cancel the check",
               "SELECT prescient.cancel($1::bigint, $2, $3, $4::timestamptz)",
               {text_of(id), std::move(job_key), by.value_or(enqueued_by_), format_time(clock_->now())});
  return rows.optional_integer(0, 0);
}

std::optional<std::int64_t> Client::cancel_id(std::int64_t id, std::optional<std::string> by) {
  return cancel(id, std::nullopt, std::move(by));
}

std::optional<std::int64_t> Client::cancel_job_key(const std::string& job_key, std::optional<std::string> by) {
  return cancel(std::nullopt, job_key, std::move(by));
}

std::optional<Rescheduled> Client::reschedule(std::optional<std::int64_t> id, std::optional<std::string> job_key,
                                              TimePoint at) {
  const pq::Result rows = pq::exec(
      native_connection(db_), "cannot reschedule the check",
      "SELECT id, job_key, prescient.us(next_check_at)"
      " FROM prescient.reschedule($1::timestamptz, $2::bigint, $3, $4::timestamptz)",
      {format_time(at), text_of(id), std::move(job_key), format_time(clock_->now())});
  if (rows.rows() == 0) return std::nullopt;
  return Rescheduled{.id = rows.integer(0, 0), .job_key = rows.optional_text(0, 1), .next_check_at = rows.time(0, 2)};
}

std::optional<Rescheduled> Client::reschedule_id(std::int64_t id, TimePoint at) {
  return reschedule(id, std::nullopt, at);
}

std::optional<Rescheduled> Client::reschedule_job_key(const std::string& job_key, TimePoint at) {
  return reschedule(std::nullopt, job_key, at);
}

}  // namespace prescient
