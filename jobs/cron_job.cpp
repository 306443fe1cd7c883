#include "cron_job.hpp"

#include <limits>

#include "db/cron_class.hpp"
#include "prescient/cron_spec.hpp"
#include "prescient/duration.hpp"
#include "prescient/time_text.hpp"

namespace prescient {
namespace {

// More missed occurrences than this in one run are left for the next run (catch-up `all`).
constexpr int kMaxOccurrencesPerRun = 10000;

}  // namespace

JobPolicy CronJob::policy() const { return {.max_checks = std::numeric_limits<int>::max()}; }

JobResult CronJob::run(const Check& check, JobContext& ctx) {
  const std::string id = check.payload.value("schedule", "");
  const int version = check.payload.value("version", 0);
  const auto row = db::read_cron_definition(ctx.db(), id);
  if (!row || row->version != version) return {};  // removed, or superseded by an update

  const CronSpec spec = CronSpec::parse(row->spec);
  const auto& zone = find_time_zone(row->time_zone);
  const auto resolution = ctx.slot_resolution();
  const TimePoint now = ctx.now();
  const TimePoint current = from_unix_micros(to_unix_micros(now) - to_unix_micros(now) % Micros(resolution).count());
  const TimePoint anchor = row->anchor_at;
  const nlohmann::json payload = nlohmann::json::parse(row->payload);

  // The occurrences due: after the last one handled, up to the current slot.
  std::vector<TimePoint> on_time, missed;
  TimePoint last = row->last_occurrence_at;
  for (int n = 0; n < kMaxOccurrencesPerRun; ++n) {
    const auto next = spec.next(last, zone, anchor);
    if (!next || *next > current) break;
    (*next > current - resolution ? on_time : missed).push_back(*next);
    last = *next;
  }
  std::vector<TimePoint> fire;
  if (row->catch_up == "all") fire = missed;
  else if (row->catch_up == "one" && !missed.empty()) fire.push_back(missed.back());
  fire.insert(fire.end(), on_time.begin(), on_time.end());

  JobResult result;
  const auto type = payload.find("type");
  for (const TimePoint o : fire) {
    const std::string unix_seconds = std::to_string(to_unix_micros(o) / 1000000);
    if (row->deadline > std::chrono::seconds{0} && now - o > row->deadline) {
      const auto late = std::chrono::duration_cast<std::chrono::seconds>(now - o);
      const BufferedWrite missed_row = db::deadline_missed(
          check, id, payload.dump(), o, now,
          "occurrence " + format_time(o) + " came " + format_duration(late) + " late, beyond its deadline of " +
              format_duration(row->deadline));
      ctx.write(missed_row.sql, missed_row.params);
      continue;
    }
    if (row->job == "emit") {
      result.events.push_back({.type = type != payload.end() && type->is_string() ? type->get<std::string>() : "cron",
                               .payload = payload,
                               .id = id + "-" + unix_seconds,
                               .occurred_at = o,
                               .source = id});
    } else {
      const BufferedWrite occurrence =
          db::schedule_occurrence(row->job, id, o, "cron:" + id + ":" + unix_seconds, payload.dump(), now);
      ctx.write(occurrence.sql, occurrence.params);
    }
  }
  if (last != row->last_occurrence_at) {
    const BufferedWrite record = db::record_last_occurrence(id, version, last);
    ctx.write(record.sql, record.params);
  }
  const auto next = spec.next(last, zone, anchor);
  if (!next) return result;  // a one-shot that has fired: done
  // Far occurrences: wake up within the horizon (the runner's guard counts it from the check's slot),
  // find nothing due, and look again.
  const auto horizon = std::chrono::seconds{row->max_horizon.count() / resolution.count() * resolution.count()};
  result.next = std::min(*next, check.slot + horizon);
  return result;
}

}  // namespace prescient
