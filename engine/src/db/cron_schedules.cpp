#include "db/cron_schedules.hpp"

#include "core/text_rules.hpp"
#include "db/connection.hpp"
#include "db/pq.hpp"

namespace prescient::db {
namespace {

constexpr const char* kScheduleColumns =
    "s.id, s.spec, s.time_zone, s.job, s.payload::text, s.deadline_seconds, s.catch_up, s.version,"
    " prescient.us(s.anchor_at), prescient.us(s.created_at), prescient.us(s.updated_at),"
    " prescient.us(s.last_occurrence_at), prescient.us(f.next_check_at)";

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
  }
  return out;
}

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

bool insert_schedule(soci::session& db, const ScheduleDefinition& d, TimePoint now) {
  return pq::exec(native_connection(db), "cannot add the schedule",
                  "INSERT INTO prescient.cron_schedule (id, spec, time_zone, job, payload, deadline_seconds, catch_up,"
                  "    version, anchor_at, created_at, updated_at)"
                  " VALUES ($1, $2, $3, $4, $5::jsonb, $6::bigint, $7, 1, prescient.at_us($8), prescient.at_us($8),"
                  "         prescient.at_us($8))"
                  " ON CONFLICT (id) DO NOTHING RETURNING id",
                  definition_params(d, now))
             .rows() == 1;
}

void lock_schedule(soci::session& db, const std::string& id) {
  pq::exec(native_connection(db), "cannot lock the schedule",
           "SELECT 1 FROM prescient.cron_schedule WHERE id = $1 FOR UPDATE", {id});
}

std::optional<int> update_schedule(soci::session& db, const ScheduleDefinition& d, TimePoint now) {
  const pq::Result updated = pq::exec(
      native_connection(db), "cannot update the schedule",
      "UPDATE prescient.cron_schedule SET spec = $2, time_zone = $3, job = $4, payload = $5::jsonb,"
      "    deadline_seconds = $6::bigint, catch_up = $7, version = version + 1, updated_at = prescient.at_us($8)"
      " WHERE id = $1 RETURNING version",
      definition_params(d, now));
  if (updated.rows() == 0) return std::nullopt;
  return static_cast<int>(updated.integer(0, 0));
}

bool delete_schedule(soci::session& db, const std::string& id) {
  return pq::exec(native_connection(db), "cannot remove the schedule",
                  "DELETE FROM prescient.cron_schedule WHERE id = $1 RETURNING id", {id})
             .rows() == 1;
}

std::vector<ScheduleDefinition> read_schedules(soci::session& db, const std::optional<std::string>& id) {
  return schedules_from(pq::exec(native_connection(db), "cannot read schedules",
                                 std::string("SELECT ") + kScheduleColumns +
                                     " FROM prescient.cron_schedule s"
                                     " LEFT JOIN prescient.future_job f ON f.job_key = 'cron:' || s.id"
                                     " WHERE ($1::text IS NULL OR s.id = $1) ORDER BY s.id",
                                 {id}));
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
