#include "db/cron_class.hpp"

#include "db/pq.hpp"

namespace prescient::db {

BufferedWrite deadline_missed(const Check& check, const std::string& schedule_id, const std::string& payload,
                              TimePoint occurrence, TimePoint now, const std::string& reason) {
  return {"SELECT prescient.cron_occurrence_history($1, 'cron', $2, $3, $4::jsonb, prescient.at_us($5),"
          " prescient.at_us($6), $7, 'deadline_missed', $8, prescient.at_us($9))",
          {std::to_string(check.id), schedule_id, check.job_key, payload, pq::micros(check.first_check_at),
           pq::micros(occurrence), std::to_string(check.check_count), reason, pq::micros(now)}};
}

BufferedWrite schedule_occurrence(const Check& check, const std::string& job, const std::string& schedule_id,
                                  TimePoint occurrence, const std::string& job_key, const std::string& payload,
                                  const std::string& overlap, TimePoint now) {
  if (overlap == "allow") {
    // The schedule's class was judged when it was added: an occurrence is never refused for it.
    // The occurrence takes the schedule's priority, and starts a trace of its own (docs/design.md, "Trace
    // context").
    return {"SELECT prescient.schedule($1, 'schedule', $2, prescient.at_us($3), $4, NULL, $5::jsonb, 'cron', 'keep',"
            " prescient.at_us($6), p_allow_unknown_class => true, p_priority => prescient.cron_priority($2),"
            " p_traceparent => prescient.new_traceparent(),"
            " p_tracestate => prescient.occurrence_tracestate($2, prescient.at_us($3)))",
            {job, schedule_id, pq::micros(occurrence), job_key, payload, pq::micros(now)}};
  }
  return {"SELECT prescient.cron_occurrence_overlapping($1, $2, $3, prescient.at_us($4), $5, $6::jsonb,"
          " prescient.at_us($7), $8)",
          {std::to_string(check.id), job, schedule_id, pq::micros(occurrence), job_key, payload, pq::micros(now),
           overlap}};
}

BufferedWrite backfill_occurrences(const std::string& job, const std::string& schedule_id,
                                   std::span<const TimePoint> occurrences, const std::string& payload, TimePoint now) {
  std::string array = "{";  // a bigint[] literal: numbers only
  for (const TimePoint o : occurrences) array += (array.size() == 1 ? "" : ",") + pq::micros(o);
  array += "}";
  return {"SELECT prescient.cron_backfill_fire($1, $2, $3::bigint[], $4::jsonb, prescient.at_us($5))",
          {schedule_id, job, array, payload, pq::micros(now)}};
}

BufferedWrite end_schedule(const std::string& schedule_id, int version, const std::string& reason, int runs,
                           std::optional<TimePoint> last, TimePoint now) {
  return {R"sql(
UPDATE prescient.cron_schedule
   SET ended_at = prescient.at_us($1), ended_reason = $2, run_count = $3,
       last_occurrence_at = coalesce(prescient.at_us($4::bigint), last_occurrence_at)
 WHERE id = $5 AND version = $6)sql",
          {pq::micros(now), reason, std::to_string(runs), last ? std::optional(pq::micros(*last)) : std::nullopt,
           schedule_id, std::to_string(version)}};
}

BufferedWrite mark_schedule_invalid(const std::string& schedule_id, int version, const std::string& reason) {
  return {"UPDATE prescient.cron_schedule SET invalid_reason = $1 WHERE id = $2 AND version = $3",
          {reason, schedule_id, std::to_string(version)}};
}

}  // namespace prescient::db
