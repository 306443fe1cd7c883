#include "prescient/schedules.hpp"

#include <date/tz.h>
#include <soci/soci.h>

#include "db/pq.hpp"
#include "prescient/client.hpp"
#include "prescient/cron_spec.hpp"
#include "db/connection.hpp"
#include "prescient/database.hpp"
#include "prescient/errors.hpp"
#include "prescient/registry.hpp"
#include "core/text_rules.hpp"
#include "prescient/time_text.hpp"
#include "db/transaction.hpp"

namespace prescient {
namespace {

constexpr const char* kScheduleColumns =
    "s.id, s.spec, s.time_zone, s.job, s.payload::text, s.deadline_seconds, s.catch_up, s.version,"
    " prescient.us(s.anchor_at), prescient.us(s.created_at), prescient.us(s.updated_at),"
    " prescient.us(s.last_occurrence_at), prescient.us(f.next_check_at)";

std::vector<ScheduleDefinition> read_schedules(const pq::Result& rows) {
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
  }
  return out;
}

std::string key_of(const std::string& schedule_id) { return "cron:" + schedule_id; }

// $1 id, $2 spec, $3 time zone, $4 job, $5 payload, $6 deadline seconds, $7 catch-up, $8 now (microseconds):
// the order both add and update bind them in.
pq::Params definition_params(const ScheduleDefinition& d, TimePoint now) {
  return {d.id,
          d.spec,
          d.time_zone,
          d.job,
          d.payload.dump(),
          d.deadline ? std::optional(std::to_string(d.deadline->count())) : std::nullopt,
          d.catch_up,
          std::to_string(to_unix_micros(now))};
}

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
  const pq::Result inserted = pq::exec(
      native_connection(db_), "cannot add the schedule",
      "INSERT INTO prescient.cron_schedule (id, spec, time_zone, job, payload, deadline_seconds, catch_up, version,"
      "    anchor_at, created_at, updated_at)"
      " VALUES ($1, $2, $3, $4, $5::jsonb, $6::bigint, $7, 1, prescient.at_us($8), prescient.at_us($8),"
      "         prescient.at_us($8))"
      " ON CONFLICT (id) DO NOTHING RETURNING id",
      definition_params(definition, now));
  if (inserted.rows() == 0) {
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
  pq::exec(native_connection(db_), "cannot update the schedule",
           "SELECT 1 FROM prescient.cron_schedule WHERE id = $1 FOR UPDATE", {id});
  ScheduleDefinition d = show(id);
  if (changes.spec) d.spec = *changes.spec;
  if (changes.time_zone) d.time_zone = *changes.time_zone;
  if (changes.job) d.job = *changes.job;
  if (changes.catch_up) d.catch_up = *changes.catch_up;
  if (changes.payload) d.payload = *changes.payload;
  if (changes.deadline) d.deadline = changes.deadline;
  validate(d);
  const TimePoint now = clock_.now();
  const pq::Result updated = pq::exec(
      native_connection(db_), "cannot update the schedule",
      "UPDATE prescient.cron_schedule SET spec = $2, time_zone = $3, job = $4, payload = $5::jsonb,"
      "    deadline_seconds = $6::bigint, catch_up = $7, version = version + 1, updated_at = prescient.at_us($8)"
      " WHERE id = $1 RETURNING version",
      definition_params(d, now));
  if (updated.rows() == 0) throw NotFound("no schedule '" + id + "'");
  d.version = static_cast<int>(updated.integer(0, 0));
  // From the next occurrence on: after now, and never again before what already fired.
  arm(d, std::max(now, d.last_occurrence_at.value_or(now)));
  tx.commit();
  return show(id);
}

void Schedules::remove(const std::string& id, const std::string& by) {
  detail::Transaction tx(db_);
  const pq::Result deleted = pq::exec(native_connection(db_), "cannot remove the schedule",
                                      "DELETE FROM prescient.cron_schedule WHERE id = $1 RETURNING id", {id});
  if (deleted.rows() == 0) throw NotFound("no schedule '" + id + "'");
  Client(db_, {.clock = &clock_}).cancel_job_key(key_of(id), by);
  tx.commit();
}

std::vector<ScheduleDefinition> Schedules::list() {
  return read_schedules(pq::exec(native_connection(db_), "cannot list schedules",
                                 std::string("SELECT ") + kScheduleColumns +
                                     " FROM prescient.cron_schedule s"
                                     " LEFT JOIN prescient.future_job f ON f.job_key = 'cron:' || s.id"
                                     " ORDER BY s.id"));
}

ScheduleDefinition Schedules::show(const std::string& id) {
  const auto found = read_schedules(pq::exec(native_connection(db_), "cannot read the schedule",
                                             std::string("SELECT ") + kScheduleColumns +
                                                 " FROM prescient.cron_schedule s"
                                                 " LEFT JOIN prescient.future_job f ON f.job_key = 'cron:' || s.id"
                                                 " WHERE s.id = $1",
                                             {id}));
  if (found.empty()) throw NotFound("no schedule '" + id + "'");
  return found.front();
}

std::vector<Schedules::FiredEvent> Schedules::recent_events(const std::string& id, int limit) {
  const pq::Result rows = pq::exec(native_connection(db_), "cannot read the schedule's events",
                                   "SELECT id, prescient.us(occurred_at), prescient.us(emitted_at) FROM prescient.event"
                                   " WHERE source = $1 ORDER BY occurred_at DESC, seq DESC LIMIT $2",
                                   {id, std::to_string(limit)});
  std::vector<FiredEvent> out;
  for (int r = 0; r < rows.rows(); ++r) out.push_back({rows.text(r, 0), rows.time(r, 1), rows.time(r, 2)});
  return out;
}

}  // namespace prescient
