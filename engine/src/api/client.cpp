#include "prescient/client.hpp"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>

#include "db/enqueue.hpp"
#include "prescient/duration.hpp"
#include "prescient/errors.hpp"
#include "prescient/registry.hpp"
#include "prescient/settings.hpp"
#include "core/text_rules.hpp"
#include "prescient/time_text.hpp"

namespace prescient {

using namespace prescient::core;
namespace {

const SystemClock kSystemClock;

}  // namespace

std::string_view to_string(Scheduled::Status status) {
  switch (status) {
    case Scheduled::Status::created: return "created";
    case Scheduled::Status::replaced: return "replaced";
    case Scheduled::Status::kept: return "kept";
    case Scheduled::Status::conflict: return "conflict";
    case Scheduled::Status::debounced: return "debounced";
    case Scheduled::Status::deduplicated: return "deduplicated";
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
  const auto beyond_horizon = [&](TimePoint t) {
    return format_time(t) + " is beyond the horizon: at most " + format_duration(settings().max_horizon) +
           " after now (" + format_time(now) + ")";
  };
  if (at > now + settings().max_horizon) return beyond_horizon(at);
  if (request.window) {
    if (*request.window < std::chrono::seconds{0}) {
      return "the window " + format_duration(*request.window) + " is negative";
    }
    const TimePoint window_end = std::max(at, now) + *request.window;
    if (window_end > now + settings().max_horizon) {
      return "the window " + format_duration(*request.window) + " ends too late: " + beyond_horizon(window_end);
    }
  }
  return once_problem(request);
}

// The rules of prescient.once_problem (sql/functions/030_enqueue_rules.sql), judged before the database.
std::optional<std::string> Client::once_problem(const ScheduleRequest& request) {
  const bool debounce = request.on_conflict == OnConflict::debounce;
  if (debounce && !request.job_key) return "debounce needs a job key: the enqueues it folds into one check share it";
  if (debounce && !request.max_wait) return "debounce needs max_wait, its ceiling (without one, use replace)";
  if (request.max_wait) {
    if (!debounce) return "max_wait applies to on_conflict debounce, not " + std::string(to_string(request.on_conflict));
    if (*request.max_wait < settings().slot) {
      return "max_wait " + format_duration(*request.max_wait) + " is under the slot (" +
             format_duration(settings().slot) + ")";
    }
    if (*request.max_wait > settings().max_horizon) {
      return "max_wait " + format_duration(*request.max_wait) + " is beyond the horizon (" +
             format_duration(settings().max_horizon) + ")";
    }
  }
  if (request.dedupe_for) {
    if (!request.job_key) return "dedupe_for needs a job key: it is what a settled check is found by";
    if (*request.dedupe_for <= std::chrono::seconds{0}) {
      return "the dedupe window " + format_duration(*request.dedupe_for) + " is not positive";
    }
    if (*request.dedupe_for > std::chrono::days{366}) {
      return "the dedupe window " + format_duration(*request.dedupe_for) + " is over 366 days";
    }
  } else if (!request.dedupe_outcomes.empty()) {
    return "dedupe outcomes apply with dedupe_for";
  }
  return std::nullopt;
}

namespace {

// The dedupe outcomes of the first request that dedupes, or none.
const std::vector<Outcome>& dedupe_outcomes_of(std::span<const ScheduleRequest> requests) {
  static const std::vector<Outcome> kNone;
  for (const ScheduleRequest& r : requests) {
    if (r.dedupe_for) return r.dedupe_outcomes;
  }
  return kNone;
}

}  // namespace

Scheduled Client::schedule(const ScheduleRequest& request) {
  const TimePoint now = clock_->now();
  if (const auto problem = problem_with(request, now)) throw InvalidInput(*problem);
  return db::schedule_one(db_, request, time_of(request, now), request.by.value_or(enqueued_by_), now);
}

std::vector<Scheduled> Client::schedule_many(std::span<const ScheduleRequest> requests, bool report_conflicts) {
  if (requests.empty()) return {};
  const TimePoint now = clock_->now();
  std::vector<TimePoint> times;
  times.reserve(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (const auto problem = problem_with(requests[i], now)) {
      throw InvalidInput("request " + std::to_string(i + 1) + ": " + *problem);
    }
    // The outcomes a dedupe counts travel once per call (prescient.schedule_arrays' p_dedupe_outcomes).
    if (requests[i].dedupe_for && requests[i].dedupe_outcomes != dedupe_outcomes_of(requests)) {
      throw InvalidInput("request " + std::to_string(i + 1) +
                         ": the requests of one call that dedupe count the same outcomes");
    }
    times.push_back(time_of(requests[i], now));
  }
  return db::schedule_arrays(db_, requests, times, enqueued_by_, now, report_conflicts);
}

std::optional<std::int64_t> Client::cancel(std::optional<std::int64_t> id, std::optional<std::string> job_key,
                                           std::optional<std::string> by) {
  return db::cancel(db_, id, std::move(job_key), by.value_or(enqueued_by_), clock_->now());
}

std::optional<std::int64_t> Client::cancel_id(std::int64_t id, std::optional<std::string> by) {
  return cancel(id, std::nullopt, std::move(by));
}

std::optional<std::int64_t> Client::cancel_job_key(const std::string& job_key, std::optional<std::string> by) {
  return cancel(std::nullopt, job_key, std::move(by));
}

std::optional<Rescheduled> Client::reschedule(std::optional<std::int64_t> id, std::optional<std::string> job_key,
                                              TimePoint at) {
  return db::reschedule(db_, at, id, std::move(job_key), clock_->now());
}

std::optional<Rescheduled> Client::reschedule_id(std::int64_t id, TimePoint at) {
  return reschedule(id, std::nullopt, at);
}

std::optional<Rescheduled> Client::reschedule_job_key(const std::string& job_key, TimePoint at) {
  return reschedule(std::nullopt, job_key, at);
}

}  // namespace prescient
