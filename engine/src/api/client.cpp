#include "prescient/client.hpp"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>

#include "db/enqueue.hpp"
#include "prescient/duration.hpp"
#include "prescient/errors.hpp"
#include "prescient/settings.hpp"
#include "core/text_rules.hpp"
#include "prescient/time_text.hpp"

namespace prescient {

using namespace prescient::core;
namespace {

const SystemClock kSystemClock;

// The dedupe outcomes of the first request that dedupes, or none.
const std::vector<Outcome>& dedupe_outcomes_of(std::span<const ScheduleRequest> requests) {
  static const std::vector<Outcome> kNone;
  for (const ScheduleRequest& r : requests) {
    if (r.dedupe_for) return r.dedupe_outcomes;
  }
  return kNone;
}

}  // namespace

std::string_view to_string(Scheduled::Status status) {
  switch (status) {
    case Scheduled::Status::created: return "created";
    case Scheduled::Status::replaced: return "replaced";
    case Scheduled::Status::kept: return "kept";
    case Scheduled::Status::conflict: return "conflict";
    case Scheduled::Status::debounced: return "debounced";
    case Scheduled::Status::collected: return "collected";
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
      enqueued_by_(options.enqueued_by.empty() ? current_os_user() : std::move(options.enqueued_by)),
      allow_unknown_class_(options.allow_unknown_class) {}

const Settings& Client::settings() {
  if (!settings_) settings_ = read_settings(db_);
  return *settings_;
}

TimePoint Client::time_of(const ScheduleRequest& request, TimePoint now) const {
  // With a calendar, no time is now: the next opening from now, or a business delay counted from now.
  if ((request.at && request.in) || (!request.at && !request.in && !request.calendar)) {
    throw InvalidInput("give exactly one of a time (at) and a delay (in)");
  }
  if (request.business_delay && request.in) {
    throw InvalidInput("a business delay counts from the time (at) or from now: give no delay (in) beside it");
  }
  if (request.at) return *request.at;
  if (!request.in) return now;
  if (*request.in < std::chrono::seconds{0}) {
    throw InvalidInput("the delay " + format_duration(*request.in) + " is negative");
  }
  return now + *request.in;
}

// What only the C++ side can judge (docs/design.md, "Every rule has one home"): the shape of a request
// (a time or a delay, which SQL never sees) and text that cannot reach SQL intact (a NUL byte, invalid
// UTF-8). The rules of the check itself are SQL's, asked below, never restated here.
std::optional<std::string> Client::local_problem(const ScheduleRequest& request, TimePoint now) const {
  const auto view = [](const std::optional<std::string>& s) {
    return s ? std::optional<std::string_view>(*s) : std::nullopt;
  };
  const std::pair<const char*, std::optional<std::string_view>> names[] = {
      {"the job class", request.job},       {"the entity name", request.entity_name},
      {"the entity key", request.entity_key}, {"the job key", view(request.job_key)},
      {"the group key", view(request.group_key)}, {"enqueued_by", view(request.by)},
      {"the calendar", view(request.calendar)}, {"the business delay", view(request.business_delay)}};
  for (const auto& [what, value] : names) {
    if (value) {
      if (auto problem = text_problem(what, *value)) return problem;
    }
  }
  if (auto problem = payload_text_problem(request.payload)) return problem;
  try {
    time_of(request, now);
  } catch (const InvalidInput& e) {
    return e.what();
  }
  return std::nullopt;
}

std::vector<std::optional<std::string>> Client::problems_with(std::span<const ScheduleRequest> requests, TimePoint now) {
  std::vector<std::optional<std::string>> problems(requests.size());
  // Only the requests that pass the local judgment go to SQL: the others have no time to send.
  std::vector<ScheduleRequest> sent;
  std::vector<TimePoint> times;
  std::vector<std::size_t> index;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if ((problems[i] = local_problem(requests[i], now))) continue;
    sent.push_back(requests[i]);
    times.push_back(time_of(requests[i], now));
    index.push_back(i);
  }
  const auto judged = db::schedule_problems(db_, sent, times, enqueued_by_, now, allow_unknown_class_);
  for (std::size_t k = 0; k < sent.size(); ++k) problems[index[k]] = judged[k];
  return problems;
}

std::optional<std::string> Client::problem_with(const ScheduleRequest& request, TimePoint now) {
  return problems_with(std::span(&request, 1), now).front();
}

Scheduled Client::schedule(const ScheduleRequest& request) {
  const TimePoint now = clock_->now();
  if (const auto problem = local_problem(request, now)) throw InvalidInput(*problem);
  return db::schedule_one(db_, request, time_of(request, now), request.by.value_or(enqueued_by_), now,
                          allow_unknown_class_);
}

std::vector<Scheduled> Client::schedule_many(std::span<const ScheduleRequest> requests, bool report_conflicts) {
  if (requests.empty()) return {};
  const TimePoint now = clock_->now();
  std::vector<TimePoint> times;
  times.reserve(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    // Numbered as SQL numbers the items it refuses.
    if (const auto problem = local_problem(requests[i], now)) {
      throw InvalidInput("item " + std::to_string(i + 1) + ": " + *problem);
    }
    // The outcomes a dedupe counts travel once per call (prescient.schedule_arrays' p_dedupe_outcomes).
    if (requests[i].dedupe_for && requests[i].dedupe_outcomes != dedupe_outcomes_of(requests)) {
      throw InvalidInput("item " + std::to_string(i + 1) +
                         ": the requests of one call that dedupe count the same outcomes");
    }
    times.push_back(time_of(requests[i], now));
  }
  return db::schedule_arrays(db_, requests, times, enqueued_by_, now, report_conflicts, allow_unknown_class_);
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
