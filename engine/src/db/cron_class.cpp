#include "db/cron_class.hpp"

#include "db/connection.hpp"
#include "db/pq.hpp"

namespace prescient::db {

std::optional<CronDefinition> read_cron_definition(soci::session& db, const std::string& id) {
  const pq::Result row = pq::exec(
      native_connection(db), "cannot read the schedule",
      "SELECT s.spec, s.time_zone, s.job, s.payload::text, coalesce(s.deadline_seconds, 0), s.catch_up, s.version,"
      "       prescient.us(s.anchor_at), coalesce(prescient.us(s.last_occurrence_at), prescient.us(s.anchor_at)),"
      "       (SELECT max_horizon_seconds FROM prescient.settings)"
      "  FROM prescient.cron_schedule s WHERE s.id = $1",
      {id});
  if (row.rows() == 0) return std::nullopt;
  return CronDefinition{.spec = row.text(0, 0),
                        .time_zone = row.text(0, 1),
                        .job = row.text(0, 2),
                        .payload = row.text(0, 3),
                        .catch_up = row.text(0, 5),
                        .deadline = std::chrono::seconds{row.integer(0, 4)},
                        .version = static_cast<int>(row.integer(0, 6)),
                        .anchor_at = row.time(0, 7),
                        .last_occurrence_at = row.time(0, 8),
                        .max_horizon = std::chrono::seconds{row.integer(0, 9)}};
}

BufferedWrite deadline_missed(const Check& check, const std::string& schedule_id, const std::string& payload,
                              TimePoint occurrence, TimePoint now, const std::string& reason) {
  return {"INSERT INTO prescient.job_history (id, job, entity_name, entity_key, job_key, payload,"
          " first_check_at, last_check_at, check_count, attempts, last_error, enqueued_on, enqueued_by,"
          " finished_at, finished_by, outcome)"
          " VALUES ($1, 'cron', 'schedule', $2, $3, $4::jsonb, prescient.at_us($5), prescient.at_us($6), $7, 0,"
          " $8, prescient.at_us($9), 'cron', prescient.at_us($9), 'cron', 'deadline_missed')",
          {std::to_string(check.id), schedule_id, check.job_key, payload, pq::micros(check.first_check_at),
           pq::micros(occurrence), std::to_string(check.check_count), reason, pq::micros(now)}};
}

BufferedWrite schedule_occurrence(const std::string& job, const std::string& schedule_id, TimePoint occurrence,
                                  const std::string& job_key, const std::string& payload, TimePoint now) {
  return {"SELECT prescient.schedule($1, 'schedule', $2, prescient.at_us($3), $4, NULL, $5::jsonb, 'cron', 'keep',"
          " prescient.at_us($6))",
          {job, schedule_id, pq::micros(occurrence), job_key, payload, pq::micros(now)}};
}

BufferedWrite record_last_occurrence(const std::string& schedule_id, int version, TimePoint last) {
  return {"UPDATE prescient.cron_schedule SET last_occurrence_at = prescient.at_us($1) WHERE id = $2 AND version = $3",
          {pq::micros(last), schedule_id, std::to_string(version)}};
}

}  // namespace prescient::db
