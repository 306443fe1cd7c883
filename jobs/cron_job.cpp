#include "cron_job.hpp"

#include <limits>

#include "db/cron_class.hpp"
#include "prescient/cron_spec.hpp"
#include "prescient/duration.hpp"
#include "prescient/errors.hpp"
#include "prescient/slot_grid.hpp"
#include "prescient/time_text.hpp"

namespace prescient {
namespace {

// More missed occurrences than this in one run are left for the next run (catch-up `all`).
constexpr int kMaxOccurrencesPerRun = 10000;

// The definition a cron check carries (cron_check_payload). A payload without it is not a cron check's:
// the run fails, visibly, rather than guess.
struct Carried {
  std::string id, spec, time_zone, job, catch_up;
  int version = 0;
  const nlohmann::json* payload = nullptr;  // points into the check's payload
  std::optional<std::chrono::seconds> deadline;
  std::optional<std::chrono::seconds> window;  // each occurrence fires at the schedule's place in it
  std::optional<std::chrono::seconds> jitter;  // each occurrence fires at an offset of its own within it
  TimePoint anchor;
  std::optional<TimePoint> last;  // the last occurrence fired
  TimePoint cursor;               // occurrences after it are still to handle

  static Carried from(const nlohmann::json& p) {
    const auto text = [&](const char* key) {
      const auto it = p.find(key);
      if (it == p.end() || !it->is_string()) throw InvalidInput(std::string("the cron check's payload has no '") + key + "'");
      return it->get<std::string>();
    };
    const auto micros = [&](const char* key) -> std::optional<TimePoint> {
      const auto it = p.find(key);
      if (it == p.end() || it->is_null()) return std::nullopt;
      if (!it->is_number_integer()) throw InvalidInput(std::string("the cron check's payload has a bad '") + key + "'");
      return from_unix_micros(it->get<std::int64_t>());
    };
    const auto seconds = [&](const char* key) -> std::optional<std::chrono::seconds> {
      const auto it = p.find(key);
      if (it == p.end() || !it->is_number_integer()) return std::nullopt;
      return std::chrono::seconds{it->get<std::int64_t>()};
    };
    Carried c{.id = text("schedule"), .spec = text("spec"), .time_zone = text("time_zone"), .job = text("job"),
              .catch_up = text("catch_up")};
    const auto version = p.find("version");
    const auto payload = p.find("payload");
    const auto anchor = micros("anchor_us");
    if (version == p.end() || !version->is_number_integer() || payload == p.end() || !payload->is_object() || !anchor) {
      throw InvalidInput("the cron check's payload lacks its version, payload or anchor");
    }
    c.version = version->get<int>();
    c.payload = &*payload;
    c.deadline = seconds("deadline_seconds");
    c.window = seconds("window_seconds");
    c.jitter = seconds("jitter_seconds");
    c.anchor = *anchor;
    c.last = micros("last_us");
    c.cursor = std::max(c.last.value_or(c.anchor), micros("from_us").value_or(c.anchor));
    return c;
  }
};

JobResult mark_invalid(const Carried& c, JobContext& ctx, const std::string& reason) {
  const BufferedWrite mark = db::mark_schedule_invalid(c.id, c.version, reason);
  ctx.write(mark.sql, mark.params);
  return {};
}

}  // namespace

JobPolicy CronJob::policy() const { return {.max_checks = std::numeric_limits<int>::max()}; }

JobResult CronJob::run(const Check& check, JobContext& ctx) {
  const Carried c = Carried::from(check.payload);
  std::optional<CronSpec> parsed;
  const date::time_zone* zone = nullptr;
  try {
    parsed = CronSpec::parse(c.spec);
    zone = &find_time_zone(c.time_zone);
  } catch (const InvalidInput& e) {
    return mark_invalid(c, ctx, e.what());
  }
  const CronSpec& spec = *parsed;
  const auto resolution = ctx.slot_resolution();
  const TimePoint now = ctx.now();
  const TimePoint current = from_unix_micros(to_unix_micros(now) - to_unix_micros(now) % Micros(resolution).count());
  // When an occurrence is due. With a window, at its place in it: the check's id picks the slot, as
  // prescient.spread_slot did when the schedule was armed (docs/flow-control.md, "Spreading a herd").
  // With a jitter, at an offset of its own (docs/schedules.md). Never before the occurrence.
  const SlotGrid grid(resolution);
  const auto due = [&](TimePoint occurrence) {
    if (c.window) return occurrence + grid.spread_offset(check.id, *c.window);
    if (c.jitter) return occurrence + grid.jitter_offset(c.id, occurrence, *c.jitter);
    return occurrence;
  };

  // The occurrences due: after the cursor, up to the current slot.
  std::vector<TimePoint> on_time, missed;
  TimePoint last = c.cursor;
  for (int n = 0; n < kMaxOccurrencesPerRun; ++n) {
    const auto next = spec.next(last, *zone, c.anchor);
    if (!next) break;
    const TimePoint next_due = due(*next);
    if (next_due > current) break;
    (next_due > current - 2 * resolution ? on_time : missed).push_back(*next);
    last = *next;
  }
  std::vector<TimePoint> fire;
  if (c.catch_up == "all") fire = missed;
  else if (c.catch_up == "one" && !missed.empty()) fire.push_back(missed.back());
  fire.insert(fire.end(), on_time.begin(), on_time.end());

  JobResult result;
  const nlohmann::json& payload = *c.payload;
  const auto type = payload.find("type");
  std::string serialized;  // the payload as the buffered writes take it, serialized once
  const auto payload_text = [&]() -> const std::string& {
    if (serialized.empty()) serialized = payload.dump();
    return serialized;
  };
  for (const TimePoint o : fire) {
    const std::string unix_seconds = std::to_string(to_unix_micros(o) / 1000000);
    // The deadline counts from when the occurrence was due (its place in a window, or its jitter).
    if (c.deadline && now - due(o) > *c.deadline) {
      const auto late = std::chrono::duration_cast<std::chrono::seconds>(now - due(o));
      const BufferedWrite missed_row = db::deadline_missed(
          check, c.id, payload_text(), o, now,
          "occurrence " + format_time(o) + " came " + format_duration(late) + " late, beyond its deadline of " +
              format_duration(*c.deadline));
      ctx.write(missed_row.sql, missed_row.params);
      continue;
    }
    if (c.job == "emit") {
      result.events.push_back({.type = type != payload.end() && type->is_string() ? type->get<std::string>() : "cron",
                               .payload = payload,
                               .id = c.id + "-" + unix_seconds,
                               .occurred_at = o,
                               .source = c.id});
    } else {
      const BufferedWrite occurrence =
          db::schedule_occurrence(c.job, c.id, o, "cron:" + c.id + ":" + unix_seconds, payload_text(), now);
      ctx.write(occurrence.sql, occurrence.params);
    }
  }
  if (last != c.cursor) result.payload_update = nlohmann::json{{"last_us", to_unix_micros(last)}};
  const auto next = spec.next(last, *zone, c.anchor);
  if (!next) {
    // A one-shot that has fired is done; a spec that never fires at all was never usable.
    if (c.last || last != c.cursor) return result;
    return mark_invalid(c, ctx, "it never fires after " + format_time(c.cursor));
  }
  // Far occurrences: wake up within the horizon (the runner's guard counts it from the check's slot),
  // find nothing due, and look again.
  const auto horizon = std::chrono::seconds{ctx.max_horizon().count() / resolution.count() * resolution.count()};
  result.next = std::min(due(*next), check.slot + horizon);
  return result;
}

}  // namespace prescient
