#include "cron_job.hpp"

#include <limits>

#include "db/cron_class.hpp"
#include "prescient/calendar_binding.hpp"
#include "prescient/cron_spec.hpp"
#include "prescient/duration.hpp"
#include "prescient/errors.hpp"
#include "prescient/slot_grid.hpp"
#include "prescient/time_text.hpp"
#include "prescient/time_zone.hpp"

namespace prescient::jobs {
namespace {

std::int64_t to_unix_seconds(TimePoint t) { return to_unix_micros(t) / 1000000; }

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
  std::string overlap = "allow";               // for the checks of a class the occurrences make
  std::string dst_repeated = "auto", dst_missing = "auto";  // judged with the spec, as the runner parses it
  std::string calendar;              // bound to it when not empty: occurrences fire in its open time only
  std::string when_closed = "skip";  // what an occurrence in its closed time does: skip or move
  std::optional<TimePoint> start, end;         // the bounds: occurrences outside them do not fire
  std::optional<int> max_runs;                 // and at most this many fire; `runs` have so far
  int runs = 0;
  std::optional<TimePoint> backfill_to;  // a backfill's check: fire the occurrences up to it, then finish
  std::optional<TimePoint> trigger_at;   // a trigger's check: fire one occurrence at this time, then finish
  std::string trigger_id;                // with this id (SQL's: the event's id, or the check's job key)
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
    const auto integer = [&](const char* key) -> std::optional<std::int64_t> {
      const auto it = p.find(key);
      if (it == p.end() || !it->is_number_integer()) return std::nullopt;
      return it->get<std::int64_t>();
    };
    const auto seconds = [&](const char* key) -> std::optional<std::chrono::seconds> {
      const auto n = integer(key);
      return n ? std::optional(std::chrono::seconds{*n}) : std::nullopt;
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
    const auto optional_text = [&](const char* key, std::string& out) {
      if (const auto it = p.find(key); it != p.end() && it->is_string()) out = *it;
    };
    optional_text("overlap", c.overlap);
    optional_text("dst_repeated", c.dst_repeated);
    optional_text("dst_missing", c.dst_missing);
    optional_text("calendar", c.calendar);
    optional_text("when_closed", c.when_closed);
    c.start = micros("start_us");
    c.end = micros("end_us");
    if (const auto max_runs = integer("max_runs")) c.max_runs = static_cast<int>(*max_runs);
    c.runs = static_cast<int>(integer("runs").value_or(0));
    c.backfill_to = micros("backfill_to_us");
    c.trigger_at = micros("trigger_us");
    if (c.trigger_at) c.trigger_id = text("trigger_id");
    c.anchor = *anchor;
    c.last = micros("last_us");
    const auto from = micros("from_us");
    if (c.backfill_to && !from) throw InvalidInput("the cron backfill's payload has no 'from_us'");
    // A backfill starts where it was asked to, before the anchor too.
    const TimePoint start = c.backfill_to ? *from : c.anchor;
    c.cursor = std::max(c.last.value_or(start), from.value_or(start));
    return c;
  }
};

// The event an occurrence of an emit schedule publishes: its id is the schedule's and the occurrence's
// (<schedule>-<unix seconds>), so a replay or a backfill writes nothing twice.
Event occurrence_event(const Carried& c, TimePoint occurrence) {
  const nlohmann::json& payload = *c.payload;
  const auto type = payload.find("type");
  return {.type = type != payload.end() && type->is_string() ? type->get<std::string>() : "cron",
          .payload = payload,
          .id = c.id + "-" + std::to_string(to_unix_seconds(occurrence)),
          .occurred_at = occurrence,
          .source = c.id};
}

JobResult mark_invalid(const Carried& c, JobContext& ctx, const std::string& reason) {
  const BufferedWrite mark = db::mark_schedule_invalid(c.id, c.version, reason);
  ctx.write(mark.sql, mark.params);
  return {};
}

// A backfill's check (prescient.cron_backfill): every occurrence after the cursor up to backfill_to fires,
// whatever the catch-up policy, deadline, window, jitter, overlap policy and bounds say; what ran already
// is not fired again (for emit: the event id exists; for a class: cron_backfill_fire looks). Finishes
// when the range is done; a range of more occurrences than one run fires goes on at the next slot.
JobResult run_backfill(const Carried& c, const Check& check, JobContext& ctx, const CronSpec& spec,
                       const TimeZone& zone, const CalendarBinding& binding) {
  std::vector<TimePoint> fire;
  TimePoint last = c.cursor;
  for (int n = 0; n < kMaxOccurrencesPerRun; ++n) {
    const auto next = spec.next(last, zone, c.anchor);
    if (!next || *next > *c.backfill_to) break;
    // A bound schedule's backfill fires what it would have fired: in open time, moved ones once.
    if (const auto at = binding.place(*next); at && (fire.empty() || fire.back() != *at)) fire.push_back(*at);
    last = *next;
  }
  JobResult result;
  if (fire.empty()) return result;
  const BufferedWrite write = db::backfill_occurrences(c.job, c.id, fire, c.payload->dump(), ctx.now());
  ctx.write(write.sql, write.params);
  if (c.job == "emit") {
    for (const TimePoint o : fire) result.events.push_back(occurrence_event(c, o));
  }
  if (static_cast<int>(fire.size()) == kMaxOccurrencesPerRun) {
    result.payload_update = nlohmann::json{{"last_us", to_unix_micros(last)}};
    result.next = check.slot + ctx.slot_resolution();
  }
  return result;
}

// A trigger's check (prescient.cron_trigger): one occurrence at the trigger's time, with the id SQL gave it,
// whatever the spec, bounds and policies say; the series does not move. Then the check finishes.
JobResult run_trigger(const Carried& c, const Check& check, JobContext& ctx) {
  JobResult result;
  if (c.job == "emit") {
    Event event = occurrence_event(c, *c.trigger_at);
    event.id = c.trigger_id;
    result.events.push_back(std::move(event));
  } else {
    const BufferedWrite occurrence =
        db::schedule_occurrence(check, c.job, c.id, *c.trigger_at, c.trigger_id, c.payload->dump(), "allow", ctx.now());
    ctx.write(occurrence.sql, occurrence.params);
  }
  return result;
}

// When an occurrence (where it fires, for a bound schedule) is due. With a window, at its place in it: the
// check's id picks the slot, as prescient.spread_slot did when the schedule was armed (docs/flow-control.md,
// "Spreading a herd"). With a jitter, at an offset of its own (docs/schedules.md). Bound to a calendar, the
// offset counts its open time. Never before the occurrence.
struct DueAt {
  const Carried& c;
  std::int64_t check_id;
  SlotGrid grid;
  const CalendarBinding& binding;
  TimePoint operator()(TimePoint occurrence) const {
    if (c.window) return binding.offset(occurrence, grid.spread_offset(check_id, *c.window));
    if (c.jitter) return binding.offset(occurrence, grid.jitter_offset(c.id, occurrence, *c.jitter));
    return occurrence;
  }
};

// Whether an occurrence is the schedule's as far as its end_at goes.
bool within_end(const Carried& c, const std::optional<TimePoint>& occurrence) {
  return occurrence && (!c.end || *occurrence <= *c.end);
}

// The occurrences due after `begin` up to the current slot (and end_at), as the catch-up policy picks
// them: of those missed (due two slots ago or earlier) all, the last or none, then those on time. A bound
// schedule's are where they fire: those skipped are passed over once their time has come, and those moved
// to the same opening fire there once.
struct DueOccurrences {
  std::vector<TimePoint> fire;
  TimePoint last;  // the last occurrence looked at: the schedule's new cursor
};
DueOccurrences due_occurrences(const Carried& c, const CronSpec& spec, const TimeZone& zone, const DueAt& due,
                               TimePoint begin, TimePoint current, Micros resolution) {
  std::vector<TimePoint> on_time, missed;
  TimePoint last = begin;
  for (int n = 0; n < kMaxOccurrencesPerRun; ++n) {
    const auto next = spec.next(last, zone, c.anchor);
    if (!within_end(c, next)) break;
    if (const auto at = due.binding.place(*next)) {
      const TimePoint next_due = due(*at);
      if (next_due > current) break;
      std::vector<TimePoint>& fired = next_due > current - 2 * resolution ? on_time : missed;
      if (fired.empty() || fired.back() != *at) fired.push_back(*at);
    } else if (*next > current) {
      break;
    }
    last = *next;
  }
  DueOccurrences out{.last = last};
  if (c.catch_up == "all") out.fire = missed;
  else if (c.catch_up == "one" && !missed.empty()) out.fire.push_back(missed.back());
  out.fire.insert(out.fire.end(), on_time.begin(), on_time.end());
  return out;
}

// Fires each occurrence (an event for emit, a check of its class otherwise) or records it missed past
// its deadline, up to max_runs; answers how many runs the schedule has made in all.
int fire_occurrences(const Carried& c, const Check& check, JobContext& ctx, const std::vector<TimePoint>& fire,
                     const DueAt& due, TimePoint now, JobResult& result) {
  std::string serialized;  // the payload as the buffered writes take it, serialized once
  const auto payload_text = [&]() -> const std::string& {
    if (serialized.empty()) serialized = c.payload->dump();
    return serialized;
  };
  int runs = c.runs;
  for (const TimePoint o : fire) {
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
    if (c.max_runs && runs >= *c.max_runs) break;
    ++runs;
    if (c.job == "emit") {
      result.events.push_back(occurrence_event(c, o));
    } else {
      const BufferedWrite occurrence =
          db::schedule_occurrence(check, c.job, c.id, o, "cron:" + c.id + ":" + std::to_string(to_unix_seconds(o)),
                                  payload_text(), c.overlap, now);
      ctx.write(occurrence.sql, occurrence.params);
    }
  }
  return runs;
}

// Why a bounded schedule has run out, if it has: then its check finishes, and its row says why.
std::optional<std::string> why_ended(const Carried& c, int runs, const std::optional<TimePoint>& next) {
  if (c.max_runs && runs >= *c.max_runs) return "it ran its max_runs (" + std::to_string(*c.max_runs) + ")";
  if (c.end && !within_end(c, next)) return "no occurrence left up to its end_at " + format_time(*c.end);
  return std::nullopt;
}

}  // namespace

JobPolicy CronJob::policy() const { return {.max_checks = std::numeric_limits<int>::max()}; }

JobResult CronJob::run(const Check& check, JobContext& ctx) {
  const Carried c = Carried::from(check.payload);
  if (c.trigger_at) return run_trigger(c, check, ctx);
  std::optional<CronSpec> parsed;
  const TimeZone* zone = nullptr;
  try {
    parsed = CronSpec::parse(c.spec, DstPolicy::parse(c.dst_repeated, c.dst_missing));
    zone = &find_time_zone(c.time_zone);
  } catch (const InvalidInput& e) {
    return mark_invalid(c, ctx, e.what());
  }
  const CronSpec& spec = *parsed;
  CalendarBinding binding;
  std::shared_ptr<const OpenTime> open_time;  // held while the run uses it
  if (!c.calendar.empty()) {
    try {
      binding.when_closed = parse_when_closed(c.when_closed);
    } catch (const InvalidInput& e) {
      return mark_invalid(c, ctx, e.what());
    }
    open_time = calendars_.current(c.calendar, check.slot, ctx.db());
    binding.open_time = open_time.get();
  }
  if (c.backfill_to) return run_backfill(c, check, ctx, spec, *zone, binding);
  const auto resolution = ctx.slot_resolution();
  const TimePoint now = ctx.now();
  const TimePoint current = from_unix_micros(to_unix_micros(now) - to_unix_micros(now) % Micros(resolution).count());
  const DueAt due{.c = c, .check_id = check.id, .grid = SlotGrid(resolution), .binding = binding};
  // Occurrences before start_at are not the schedule's: one at start_at fires.
  const TimePoint begin = c.start ? std::max(c.cursor, *c.start - Micros{1}) : c.cursor;

  const DueOccurrences occurrences = due_occurrences(c, spec, *zone, due, begin, current, resolution);
  const TimePoint last = occurrences.last;
  JobResult result;
  const int runs = fire_occurrences(c, check, ctx, occurrences.fire, due, now, result);
  if (last != begin || runs != c.runs) {
    result.payload_update = nlohmann::json::object();
    if (last != begin) (*result.payload_update)["last_us"] = to_unix_micros(last);
    if (runs != c.runs) (*result.payload_update)["runs"] = runs;
  }
  const auto next = spec.next(last, *zone, c.anchor);
  if (const auto ended = why_ended(c, runs, next)) {
    const std::optional<TimePoint> last_handled = last != begin ? std::optional(last) : c.last;
    const BufferedWrite end = db::end_schedule(c.id, c.version, *ended, runs, last_handled, now);
    ctx.write(end.sql, end.params);
    return result;
  }
  if (!next) {
    // A one-shot that has fired is done; a spec that never fires at all was never usable.
    if (c.last || last != begin) return result;
    return mark_invalid(c, ctx, "it never fires after " + format_time(begin));
  }
  // Far occurrences: wake up within the horizon (the runner's guard counts it from the check's slot),
  // find nothing due, and look again. So too when a bound schedule's next firing is further off than the
  // occurrences it looks through at once.
  const auto horizon = std::chrono::seconds{ctx.max_horizon().count() / resolution.count() * resolution.count()};
  TimePoint wake = due(*next);
  if (binding.open_time) {
    const auto firing = binding.next_firing(spec, *zone, last, c.anchor);
    wake = firing ? due(firing->at) : check.slot + horizon;
  }
  result.next = std::min(wake, check.slot + horizon);
  return result;
}

}  // namespace prescient::jobs
