#include "prescient/schedules.hpp"

#include <date/tz.h>

#include "db/cron_schedules.hpp"
#include "prescient/client.hpp"
#include "prescient/cron_spec.hpp"
#include "prescient/errors.hpp"
#include "prescient/registry.hpp"
#include "core/text_rules.hpp"
#include "prescient/time_text.hpp"
#include "db/transaction.hpp"

namespace prescient {
namespace {

std::string key_of(const std::string& schedule_id) { return "cron:" + schedule_id; }

}  // namespace

bool is_catch_up_policy(const std::string& policy) { return policy == "one" || policy == "all" || policy == "none"; }

Schedules::Schedules(soci::session& db, const Clock& clock, const Registry* registry)
    : db_(db), clock_(clock), registry_(registry) {}

void Schedules::validate(const ScheduleDefinition& d) const {
  if (d.id.empty()) throw InvalidInput("the schedule id is empty");
  // The id becomes part of the cron check's job key ("cron:<id>") and of event ids.
  if (auto problem = name_problem("the schedule id", d.id)) throw InvalidInput(*problem);
  if (auto problem = name_problem("the cron spec", d.spec)) throw InvalidInput(*problem);
  if (auto problem = name_problem("the time zone", d.time_zone)) throw InvalidInput(*problem);
  if (auto problem = name_problem("the job class", d.job)) throw InvalidInput(*problem);
  if (auto problem = payload_text_problem(d.payload)) throw InvalidInput(*problem);
  CronSpec::parse(d.spec);
  find_time_zone(d.time_zone);
  if (!is_catch_up_policy(d.catch_up)) {
    throw InvalidInput("invalid catch-up policy '" + d.catch_up + "': use one, all or none");
  }
  if (!d.payload.is_object()) throw InvalidInput("the payload must be a JSON object");
  if (d.deadline && *d.deadline < std::chrono::seconds{1}) throw InvalidInput("the deadline must be at least 1s");
  if (d.job == "cron") throw InvalidInput("a schedule cannot run the cron class itself");
  if (registry_ != nullptr) registry_->require(d.job);
}

void Schedules::arm(const ScheduleDefinition& d, TimePoint after) {
  const CronSpec spec = CronSpec::parse(d.spec);
  const auto first = spec.next(after, find_time_zone(d.time_zone), d.anchor_at);
  if (!first) throw InvalidInput("schedule '" + d.id + "' never fires after " + format_time(after));
  Client client(db_, {.clock = &clock_, .enqueued_by = "cron"});
  // Beyond the horizon the check wakes up earlier, finds nothing due and re-arms itself.
  const TimePoint at = std::min(*first, clock_.now() + client.settings().max_horizon);
  client.schedule({.job = "cron", .entity_name = "schedule", .entity_key = d.id, .job_key = key_of(d.id), .at = at,
                   .payload = {{"schedule", d.id}, {"version", d.version}},
                   .on_conflict = OnConflict::replace});
}

ScheduleDefinition Schedules::add(const ScheduleDefinition& definition) {
  validate(definition);
  const TimePoint now = clock_.now();
  detail::Transaction tx(db_);
  if (!db::insert_schedule(db_, definition, now)) {
    throw InvalidInput("schedule '" + definition.id + "' exists already (use `prescient cron update`)");
  }
  ScheduleDefinition stored = definition;
  stored.anchor_at = now;
  arm(stored, now);
  tx.commit();
  return show(definition.id);
}

ScheduleDefinition Schedules::update(const std::string& id, const ScheduleChanges& changes) {
  detail::Transaction tx(db_);
  // Read under the row lock: a concurrent update (or the cron check recording an occurrence) waits,
  // so neither change is lost to the other's stale copy of the row.
  db::lock_schedule(db_, id);
  ScheduleDefinition d = show(id);
  if (changes.spec) d.spec = *changes.spec;
  if (changes.time_zone) d.time_zone = *changes.time_zone;
  if (changes.job) d.job = *changes.job;
  if (changes.catch_up) d.catch_up = *changes.catch_up;
  if (changes.payload) d.payload = *changes.payload;
  if (changes.deadline) d.deadline = changes.deadline;
  validate(d);
  const TimePoint now = clock_.now();
  const std::optional<int> version = db::update_schedule(db_, d, now);
  if (!version) throw NotFound("no schedule '" + id + "'");
  d.version = *version;
  // From the next occurrence on: after now, and never again before what already fired.
  arm(d, std::max(now, d.last_occurrence_at.value_or(now)));
  tx.commit();
  return show(id);
}

void Schedules::remove(const std::string& id, const std::string& by) {
  detail::Transaction tx(db_);
  if (!db::delete_schedule(db_, id)) throw NotFound("no schedule '" + id + "'");
  Client(db_, {.clock = &clock_}).cancel_job_key(key_of(id), by);
  tx.commit();
}

std::vector<ScheduleDefinition> Schedules::list() { return db::read_schedules(db_, std::nullopt); }

ScheduleDefinition Schedules::show(const std::string& id) {
  const auto found = db::read_schedules(db_, id);
  if (found.empty()) throw NotFound("no schedule '" + id + "'");
  return found.front();
}

std::vector<Schedules::FiredEvent> Schedules::recent_events(const std::string& id, int limit) {
  return db::recent_schedule_events(db_, id, limit);
}

}  // namespace prescient
