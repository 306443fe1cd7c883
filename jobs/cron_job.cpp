#include "cron_job.hpp"

#include <soci/soci.h>

#include <limits>

#include "prescient/cron_spec.hpp"
#include "prescient/duration.hpp"
#include "prescient/time_text.hpp"

namespace prescient {
namespace {

// More missed occurrences than this in one run are left for the next run (catch-up `all`).
constexpr int kMaxOccurrencesPerRun = 10000;

struct ScheduleRow {
  std::string spec, zone, job, payload, catch_up;
  long long deadline_seconds = 0, anchor_us = 0, last_us = 0, horizon_seconds = 0;
  int version = 0;
};

std::string micros_text(TimePoint t) { return std::to_string(to_unix_micros(t)); }

}  // namespace

JobPolicy CronJob::policy() const { return {.max_checks = std::numeric_limits<int>::max()}; }

JobResult CronJob::run(const Check& check, JobContext& ctx) {
  const std::string id = check.payload.value("schedule", "");
  const int version = check.payload.value("version", 0);
  ScheduleRow row;
  soci::indicator found = soci::i_null;
  ctx.db() << "SELECT s.spec, s.time_zone, s.job, s.payload::text, coalesce(s.deadline_seconds, 0), s.catch_up,"
              " s.version, prescient.us(s.anchor_at), coalesce(prescient.us(s.last_occurrence_at), prescient.us(s.anchor_at)),"
              " (SELECT max_horizon_seconds FROM prescient.settings)"
              " FROM prescient.cron_schedule s WHERE s.id = :id",
      soci::use(id), soci::into(row.spec, found), soci::into(row.zone), soci::into(row.job), soci::into(row.payload),
      soci::into(row.deadline_seconds), soci::into(row.catch_up), soci::into(row.version), soci::into(row.anchor_us),
      soci::into(row.last_us), soci::into(row.horizon_seconds);
  if (!ctx.db().got_data() || row.version != version) return {};  // removed, or superseded by an update

  const CronSpec spec = CronSpec::parse(row.spec);
  const auto& zone = find_time_zone(row.zone);
  const auto resolution = ctx.slot_resolution();
  const TimePoint now = ctx.now();
  const TimePoint current = from_unix_micros(to_unix_micros(now) - to_unix_micros(now) % Micros(resolution).count());
  const TimePoint anchor = from_unix_micros(row.anchor_us);
  const nlohmann::json payload = nlohmann::json::parse(row.payload);

  // The occurrences due: after the last one handled, up to the current slot.
  std::vector<TimePoint> on_time, missed;
  TimePoint last = from_unix_micros(row.last_us);
  for (int n = 0; n < kMaxOccurrencesPerRun; ++n) {
    const auto next = spec.next(last, zone, anchor);
    if (!next || *next > current) break;
    (*next > current - resolution ? on_time : missed).push_back(*next);
    last = *next;
  }
  std::vector<TimePoint> fire;
  if (row.catch_up == "all") fire = missed;
  else if (row.catch_up == "one" && !missed.empty()) fire.push_back(missed.back());
  fire.insert(fire.end(), on_time.begin(), on_time.end());

  JobResult result;
  const auto type = payload.find("type");
  for (const TimePoint o : fire) {
    const std::string unix_seconds = std::to_string(to_unix_micros(o) / 1000000);
    if (row.deadline_seconds > 0 && now - o > std::chrono::seconds{row.deadline_seconds}) {
      ctx.write("INSERT INTO prescient.job_history (id, job, entity_name, entity_key, job_key, payload,"
                " first_check_at, last_check_at, check_count, attempts, last_error, enqueued_on, enqueued_by,"
                " finished_at, finished_by, outcome)"
                " VALUES ($1, 'cron', 'schedule', $2, $3, $4::jsonb, prescient.at_us($5), prescient.at_us($6), $7, 0,"
                " $8, prescient.at_us($9), 'cron', prescient.at_us($9), 'cron', 'deadline_missed')",
                {std::to_string(check.id), id, check.job_key, payload.dump(), micros_text(check.first_check_at),
                 micros_text(o), std::to_string(check.check_count),
                 "occurrence " + format_time(o) + " came " + format_duration(std::chrono::duration_cast<std::chrono::seconds>(now - o)) +
                     " late, beyond its deadline of " + format_duration(std::chrono::seconds{row.deadline_seconds}),
                 micros_text(now)});
      continue;
    }
    if (row.job == "emit") {
      result.events.push_back({.type = type != payload.end() && type->is_string() ? type->get<std::string>() : "cron",
                               .payload = payload,
                               .id = id + "-" + unix_seconds,
                               .occurred_at = o,
                               .source = id});
    } else {
      ctx.write("SELECT prescient.schedule($1, 'schedule', $2, prescient.at_us($3), $4, NULL, $5::jsonb, 'cron', 'keep',"
                " prescient.at_us($6))",
                {row.job, id, micros_text(o), "cron:" + id + ":" + unix_seconds, payload.dump(), micros_text(now)});
    }
  }
  if (last != from_unix_micros(row.last_us)) {
    ctx.write("UPDATE prescient.cron_schedule SET last_occurrence_at = prescient.at_us($1) WHERE id = $2 AND version = $3",
              {micros_text(last), id, std::to_string(version)});
  }
  const auto next = spec.next(last, zone, anchor);
  if (!next) return result;  // a one-shot that has fired: done
  // Far occurrences: wake up within the horizon (the runner's guard counts it from the check's slot),
  // find nothing due, and look again.
  const auto horizon = std::chrono::seconds{row.horizon_seconds / resolution.count() * resolution.count()};
  result.next = std::min(*next, check.slot + horizon);
  return result;
}

}  // namespace prescient
