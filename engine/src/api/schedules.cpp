#include "prescient/schedules.hpp"

#include "db/cron_schedules.hpp"
#include "prescient/calendar_binding.hpp"
#include "prescient/calendars.hpp"
#include "prescient/cron_spec.hpp"
#include "prescient/duration.hpp"
#include "prescient/errors.hpp"
#include "prescient/time_zone.hpp"
#include "core/text_rules.hpp"
#include "prescient/time_text.hpp"
#include "db/transaction.hpp"

namespace prescient {

using namespace prescient::db;
using namespace prescient::core;

Schedules::Schedules(soci::session& db, const Clock& clock) : db_(db), clock_(clock) {}

// Only what SQL cannot judge (docs/design.md, "Every rule has one home"): text that cannot reach it intact,
// and the spec and zone by the runner's own parser and tzdata, which the first occurrence needs. The rest
// of a definition (its fields, window, jitter, overlap policy, bounds) is judged by cron_add_arrays,
// cron_problems and cron_update, in the words every door gets.
CronSpec Schedules::validate(const ScheduleDefinition& d) const {
  for (const auto& [what, value] : {std::pair{"the schedule id", &d.id}, std::pair{"the cron spec", &d.spec},
                                    std::pair{"the time zone", &d.time_zone}, std::pair{"the job class", &d.job}}) {
    if (auto problem = text_problem(what, *value)) throw InvalidInput(*problem);
  }
  if (auto problem = payload_text_problem(d.payload)) throw InvalidInput(*problem);
  CronSpec spec = CronSpec::parse(d.spec, DstPolicy::parse(d.dst_repeated, d.dst_missing));
  find_time_zone(d.time_zone);
  return spec;
}

TimePoint Schedules::first_occurrence(const ScheduleDefinition& d, const CronSpec& spec, TimePoint after) const {
  const auto first = spec.next(after, find_time_zone(d.time_zone), d.anchor_at);
  if (!first) throw InvalidInput("schedule '" + d.id + "' never fires after " + format_time(after));
  return *first;
}

TimePoint Schedules::first_of_new(ScheduleDefinition d, TimePoint now) const {
  d.anchor_at = now;
  const CronSpec spec = validate(d);
  // From start_at on (an occurrence at it fires): the check sleeps until then.
  return first_occurrence(d, spec, d.start_at ? std::max(now, *d.start_at - Micros{1}) : now);
}

std::vector<std::optional<std::string>> Schedules::problems_with(
    std::span<const ScheduleDefinition> definitions) const {
  const TimePoint now = clock_.now();
  std::vector<std::optional<std::string>> problems(definitions.size());
  // Only the definitions that pass the local judgment go to SQL.
  std::vector<ScheduleDefinition> sent;
  std::vector<std::size_t> index;
  for (std::size_t i = 0; i < definitions.size(); ++i) {
    try {
      first_of_new(definitions[i], now);
    } catch (const InvalidInput& e) {
      problems[i] = e.what();
      continue;
    }
    sent.push_back(definitions[i]);
    index.push_back(i);
  }
  const auto judged = db::schedule_definition_problems(db_, sent, now);
  for (std::size_t k = 0; k < sent.size(); ++k) problems[index[k]] = judged[k];
  return problems;
}

std::optional<std::string> Schedules::problem_with(const ScheduleDefinition& definition) const {
  return problems_with(std::span(&definition, 1)).front();
}

ScheduleDefinition Schedules::add(const ScheduleDefinition& definition) {
  // Refused in the words prescient.cron_add uses for one schedule, without add_many's "item 1: ": judged
  // first (one round trip more, on this path only).
  if (const auto problem = problem_with(definition)) throw InvalidInput(*problem);
  add_many(std::span(&definition, 1));
  return show(definition.id);
}

int Schedules::add_many(std::span<const ScheduleDefinition> definitions) {
  const TimePoint now = clock_.now();
  const auto item = [](std::size_t i) { return "item " + std::to_string(i + 1) + ": "; };
  std::vector<std::optional<TimePoint>> firsts;
  firsts.reserve(definitions.size());
  for (std::size_t i = 0; i < definitions.size(); ++i) {
    // Numbered as SQL numbers the items it refuses.
    try {
      firsts.emplace_back(first_of_new(definitions[i], now));
    } catch (const InvalidInput& e) {
      throw InvalidInput(item(i) + e.what());
    }
  }
  db::Transaction tx(db_);
  const int added = db::add_schedules(db_, definitions, firsts, now);
  tx.commit();
  return added;
}

ScheduleDefinition Schedules::update(const std::string& id, const ScheduleChanges& changes,
                                     std::optional<int> expected_version) {
  db::Transaction tx(db_);
  apply({id, changes, expected_version}, clock_.now());
  tx.commit();
  return show(id);
}

int Schedules::update_many(std::span<const ScheduleUpdate> updates) {
  const TimePoint now = clock_.now();
  db::Transaction tx(db_);
  for (std::size_t i = 0; i < updates.size(); ++i) {
    const std::string item = "item " + std::to_string(i + 1) + ": ";
    try {
      apply(updates[i], now);
    } catch (const InvalidInput& e) {
      throw InvalidInput(item + e.what());
    } catch (const NotFound& e) {
      throw NotFound(item + e.what());
    }
  }
  tx.commit();
  return static_cast<int>(updates.size());
}

void Schedules::apply(const ScheduleUpdate& update, TimePoint now) {
  const ScheduleChanges& changes = update.changes;
  // Read under the row lock: a concurrent update waits, so neither change is lost to the other's stale
  // copy of the row.
  db::lock_schedule(db_, update.id);
  ScheduleDefinition d = show(update.id);
  nlohmann::json changed = nlohmann::json::object();
  if (changes.spec) changed["spec"] = d.spec = *changes.spec;
  if (changes.time_zone) changed["time_zone"] = d.time_zone = *changes.time_zone;
  if (changes.job) changed["job"] = d.job = *changes.job;
  if (changes.catch_up) changed["catch_up"] = d.catch_up = *changes.catch_up;
  if (changes.payload) changed["payload"] = d.payload = *changes.payload;
  if (changes.deadline) {
    d.deadline = changes.deadline;
    changed["deadline_seconds"] = changes.deadline->count();
  }
  if (changes.window) {
    d.window = changes.window;
    changed["window_seconds"] = changes.window->count();
  }
  if (changes.jitter) {
    d.jitter = changes.jitter;
    changed["jitter_seconds"] = changes.jitter->count();
  }
  if (changes.overlap) changed["overlap"] = d.overlap = *changes.overlap;
  if (changes.start_at) {
    d.start_at = changes.start_at;
    changed["start_at"] = format_time(*changes.start_at);
  }
  if (changes.end_at) {
    d.end_at = changes.end_at;
    changed["end_at"] = format_time(*changes.end_at);
  }
  if (changes.max_runs) changed["max_runs"] = *(d.max_runs = changes.max_runs);
  if (changes.priority) changed["priority"] = d.priority = *changes.priority;
  if (changes.pause_after_failures) {
    d.pause_after_failures = changes.pause_after_failures;
    changed["pause_after_failures"] = *changes.pause_after_failures;
  }
  if (changes.dst_repeated) changed["dst_repeated"] = d.dst_repeated = *changes.dst_repeated;
  if (changes.dst_missing) changed["dst_missing"] = d.dst_missing = *changes.dst_missing;
  if (changes.calendar) {
    d.calendar = *changes.calendar;
    changed["calendar"] = d.calendar ? nlohmann::json(*d.calendar) : nlohmann::json(nullptr);
  }
  if (changes.when_closed) changed["when_closed"] = d.when_closed = *changes.when_closed;
  const CronSpec spec = validate(d);
  // From the next occurrence on: after now, and never again before what already fired.
  const TimePoint first = first_occurrence(d, spec, std::max(now, d.last_occurrence_at.value_or(now)));
  // A new class is judged by SQL against the registry (prescient.cron_update), as every other field.
  db::update_schedule(db_, update.id, changed, update.expected_version.value_or(d.version), first, now);
}

void Schedules::remove(const std::string& id, const std::string& by) {
  db::Transaction tx(db_);
  db::remove_schedule(db_, id, by, clock_.now());
  tx.commit();
}

bool Schedules::pause(const std::string& id, const std::string& by, const std::optional<std::string>& note) {
  if (note) {
    if (auto problem = name_problem("the pause note", *note)) throw InvalidInput(*problem);
  }
  db::Transaction tx(db_);
  const bool paused = db::pause_schedule(db_, id, by, note, clock_.now());
  tx.commit();
  return paused;
}

bool Schedules::resume(const std::string& id, const std::string& by) {
  db::Transaction tx(db_);
  const bool resumed = db::resume_schedule(db_, id, by, clock_.now());
  tx.commit();
  return resumed;
}

std::int64_t Schedules::backfill(const std::string& id, TimePoint from, TimePoint to, const std::string& by) {
  db::Transaction tx(db_);
  const std::int64_t check = db::backfill_schedule(db_, id, from, to, by, clock_.now());
  tx.commit();
  return check;
}

std::string Schedules::trigger(const std::string& id, const std::string& by) {
  db::Transaction tx(db_);
  std::string occurrence = db::trigger_schedule(db_, id, by, clock_.now());
  tx.commit();
  return occurrence;
}

std::vector<ScheduleDefinition> Schedules::list(const ScheduleFilter& filter) {
  if (filter.limit < 1 || filter.limit > 10000) {
    throw InvalidInput("invalid limit " + std::to_string(filter.limit) + ": use 1 to 10000");
  }
  return db::read_schedules(db_, filter);
}

ScheduleDefinition Schedules::show(const std::string& id) {
  auto found = db::read_schedule(db_, id);
  if (!found) throw NotFound("no schedule '" + id + "'");
  return std::move(*found);
}

std::vector<Schedules::FiredEvent> Schedules::recent_events(const std::string& id, int limit) {
  return db::recent_schedule_events(db_, id, limit);
}

Schedules::Detail Schedules::detail(const std::string& id) {
  Detail detail{.definition = show(id), .next_firings = {}, .recent_events = {}};
  const ScheduleDefinition& d = detail.definition;
  const TimePoint now = clock_.now();
  // Where it fires: a bound schedule's in its calendar's open time, as the runner places them.
  std::optional<OpenTime> open_time;
  CalendarBinding binding;
  if (d.calendar) {
    open_time = prescient::open_time(db_, *d.calendar);
    binding = {.open_time = &*open_time, .when_closed = parse_when_closed(d.when_closed)};
  }
  detail.next_firings = next_firings(CronSpec::parse(d.spec, DstPolicy::parse(d.dst_repeated, d.dst_missing)),
                                     find_time_zone(d.time_zone), std::max(now, d.last_occurrence_at.value_or(now)),
                                     d.anchor_at, 5, binding);
  detail.recent_events = recent_events(id, 10);
  return detail;
}

std::string pause_status(const std::string& action, bool changed) {
  if (action == "pause") return changed ? "paused" : "paused already";
  return changed ? "resumed" : "not paused";
}

std::string state_of(const ScheduleDefinition& d) {
  if (d.invalid_reason) return "invalid";
  if (d.paused_at) return "paused";
  if (d.ended_at) return "ended";
  return d.next_check_at ? "active" : "finished";
}

nlohmann::json to_json(const ScheduleDefinition& d) {
  const auto optional_time = [](const std::optional<TimePoint>& t) {
    return t ? nlohmann::json(format_time(*t)) : nlohmann::json(nullptr);
  };
  return {{"id", d.id},
          {"spec", d.spec},
          {"time_zone", d.time_zone},
          {"job", d.job},
          {"payload", d.payload},
          {"deadline", d.deadline ? nlohmann::json(format_duration(*d.deadline)) : nlohmann::json(nullptr)},
          {"catch_up", d.catch_up},
          {"window", d.window ? nlohmann::json(format_duration(*d.window)) : nlohmann::json(nullptr)},
          {"jitter", d.jitter ? nlohmann::json(format_duration(*d.jitter)) : nlohmann::json(nullptr)},
          {"overlap", d.overlap},
          {"start_at", optional_time(d.start_at)},
          {"end_at", optional_time(d.end_at)},
          {"max_runs", d.max_runs ? nlohmann::json(*d.max_runs) : nlohmann::json(nullptr)},
          {"priority", d.priority},
          {"pause_after_failures",
           d.pause_after_failures ? nlohmann::json(*d.pause_after_failures) : nlohmann::json(nullptr)},
          {"failed_in_a_row", d.failed_in_a_row},
          {"last_failure", d.last_failure ? nlohmann::json(*d.last_failure) : nlohmann::json(nullptr)},
          {"dst_repeated", d.dst_repeated},
          {"dst_missing", d.dst_missing},
          {"calendar", d.calendar ? nlohmann::json(*d.calendar) : nlohmann::json(nullptr)},
          {"when_closed", d.when_closed},
          {"run_count", d.run_count},
          {"version", d.version},
          {"created_at", format_time(d.created_at)},
          {"updated_at", format_time(d.updated_at)},
          {"last_occurrence_at", optional_time(d.last_occurrence_at)},
          {"next_check_at", optional_time(d.next_check_at)},
          {"state", state_of(d)},
          {"paused_at", optional_time(d.paused_at)},
          {"pause_note", d.pause_note ? nlohmann::json(*d.pause_note) : nlohmann::json(nullptr)},
          {"ended_at", optional_time(d.ended_at)},
          {"ended_reason", d.ended_reason ? nlohmann::json(*d.ended_reason) : nlohmann::json(nullptr)},
          {"invalid_reason", d.invalid_reason ? nlohmann::json(*d.invalid_reason) : nlohmann::json(nullptr)}};
}

nlohmann::json to_json(const Schedules::Detail& detail) {
  nlohmann::json out = to_json(detail.definition);
  const TimeZone& zone = find_time_zone(detail.definition.time_zone);
  out["next_firings"] = nlohmann::json::array();
  out["next_firings_local"] = nlohmann::json::array();
  for (const TimePoint t : detail.next_firings) {
    out["next_firings"].push_back(format_time(t));
    out["next_firings_local"].push_back(format_local_time(t, zone));
  }
  out["recent_events"] = nlohmann::json::array();
  for (const auto& e : detail.recent_events) {
    out["recent_events"].push_back(
        {{"id", e.id}, {"occurred_at", format_time(e.occurred_at)}, {"emitted_at", format_time(e.emitted_at)}});
  }
  return out;
}

}  // namespace prescient
