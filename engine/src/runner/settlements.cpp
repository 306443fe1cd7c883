#include "runner/settlements.hpp"

#include <algorithm>

#include "core/text_rules.hpp"
#include "prescient/duration.hpp"
#include "prescient/time_text.hpp"

namespace prescient::runner {

using namespace prescient::core;


GuardLimits own_limits(GuardLimits limits, const Check& check) {
  const JobPolicy& own = check.policy;
  if (own.max_checks) limits.max_checks = *own.max_checks;
  if (own.max_attempts) limits.max_attempts = *own.max_attempts;
  if (own.backoff) limits.backoff = *own.backoff;
  if (own.backoff_max) limits.backoff_max = *own.backoff_max;
  if (limits.backoff && *limits.backoff > limits.backoff_max) limits.backoff_max = *limits.backoff;
  return limits;
}

Settlement judge(const RunOutcome& run, const Check& check, const GuardLimits& class_limits, const SlotGrid& grid) {
  const GuardLimits limits = own_limits(class_limits, check);
  Settlement s;
  if (run.failed) {
    s.check_count = check.check_count;
    s.attempts = check.attempts + 1;
    s.last_error = storable_text(run.error, kMaxErrorBytes);  // whatever the job said, it can be stored
    if (s.attempts >= limits.max_attempts) {
      s.kind = Settlement::Kind::finish;
      s.outcome = Outcome::failed;
      return s;
    }
    // B * 2^attempts without overflow: the shift is bounded well before the cap is passed.
    std::chrono::seconds backoff = limits.backoff.value_or(grid.resolution());
    for (int i = 0; i < check.attempts && backoff < limits.backoff_max; ++i) backoff *= 2;
    s.kind = Settlement::Kind::retry;
    s.next_check_at = grid.round_up(check.slot + std::min(backoff, limits.backoff_max));
    return s;
  }
  s.check_count = check.check_count + 1;
  s.attempts = 0;
  s.kind = Settlement::Kind::finish;
  if (!run.next) {
    s.outcome = Outcome::done;
  } else if (limits.max_checks > 0 && s.check_count >= limits.max_checks) {
    s.outcome = Outcome::guard_max_checks;
    s.last_error = "asked to look again at " + format_time(*run.next) + " after run " + std::to_string(s.check_count) +
                   ": max_checks is " + std::to_string(limits.max_checks) +
                   (check.policy.max_checks ? std::string(" (the check's own policy)")
                                            : " (prescient jobs set " + check.job + " --max-checks N|unlimited)");
  } else if (*run.next <= check.asked_for) {
    s.outcome = Outcome::guard_past;
    s.last_error = "answered " + format_time(*run.next) + ", not after the time this run was asked for (" +
                   format_time(check.asked_for) + "): a next time must advance";
  } else if (*run.next > check.slot + limits.max_horizon) {
    s.outcome = Outcome::guard_horizon;
    s.last_error = "answered " + format_time(*run.next) + ", beyond the horizon: at most " +
                   format_duration(limits.max_horizon) + " after the slot " + format_time(check.slot);
  } else {
    s.kind = Settlement::Kind::reschedule;
    s.next_check_at = grid.round_up(*run.next);
    s.asked_for = *run.next;
  }
  return s;
}


void tally(std::span<const SettleItem> settled, std::int64_t events, SlotReport& report) {
  report.events += events;
  for (const SettleItem& item : settled) {
    const Settlement& s = item.settlement;
    switch (s.kind) {
      case Settlement::Kind::reschedule: ++report.rescheduled; break;
      case Settlement::Kind::retry: ++report.retried; break;
      case Settlement::Kind::finish:
        if (s.outcome == Outcome::done) ++report.done;
        else if (s.outcome == Outcome::failed) ++report.failed;
        else ++report.guarded;
        break;
    }
  }
}

}  // namespace prescient::runner

namespace prescient::runner {
namespace {

// Years 1 to 9999: what PostgreSQL and ISO-8601 text both hold.
const TimePoint kEarliestEventTime = from_unix_micros(-62135596800LL * 1000000);
const TimePoint kLatestEventTime = from_unix_micros(253402300799LL * 1000000 + 999999);

std::string nth(std::size_t index) { return std::to_string(index + 1); }

// The next time of a finished check is meaningless; any other is clamped to `earliest`.
Settlement clamped(Settlement s, TimePoint earliest) {
  if (s.kind != Settlement::Kind::finish && s.next_check_at < earliest) s.next_check_at = earliest;
  return s;
}

}  // namespace

StoredJson stored_payload(const nlohmann::json& payload, const std::string& owner, std::size_t max_bytes) {
  if (auto problem = payload_text_problem(payload)) return {.problem = owner + ": " + *problem};
  std::string text = payload.dump();
  if (text.size() > max_bytes) {
    return {.problem = owner + "'s payload is " + std::to_string(text.size()) + " bytes (at most " +
                       std::to_string(max_bytes) + ")"};
  }
  return {.text = std::move(text)};
}

OutboxEvent outbox_event(const Event& event, std::size_t index, const Check& check, int check_count_after) {
  const std::string which = "event " + nth(index);
  std::string id = event.id;
  if (id.empty()) {
    id = std::to_string(check.id) + "-" + std::to_string(check_count_after);
    if (index > 0) id.append("-").append(std::to_string(index));
  } else if (auto problem = name_problem(which + "'s id", id)) {
    return {.problem = *problem};
  }
  std::string type = storable_text(event.type, kMaxNameBytes);
  if (type.empty()) return {.problem = which + " has an empty type"};
  const TimePoint occurred_at = event.occurred_at.value_or(check.slot);
  if (occurred_at < kEarliestEventTime || occurred_at > kLatestEventTime) {
    return {.problem = which + "'s occurred_at is outside the years 1 to 9999"};
  }
  StoredJson payload = stored_payload(event.payload, which, kMaxEventPayloadBytes);
  if (!payload.text) return {.problem = std::move(payload.problem)};
  return {.record = EventRecord{
              .id = std::move(id),
              .type = std::move(type),
              .source = event.source.empty() ? std::to_string(check.id) : storable_text(event.source, kMaxNameBytes),
              .occurred_at = occurred_at,
              .payload = std::move(*payload.text)}};
}

std::optional<std::string> write_problem(const BufferedWrite& write, std::size_t index) {
  const std::string which = "buffered write " + nth(index);
  if (write.sql.find_first_not_of(" \t\r\n") == std::string::npos) return which + " has no SQL";
  if (write.sql.find('\0') != std::string::npos || !valid_utf8(write.sql)) {
    return which + "'s SQL contains a NUL byte or invalid UTF-8";
  }
  for (std::size_t p = 0; p < write.params.size(); ++p) {
    const auto& value = write.params[p];
    if (!value) continue;
    if (value->find('\0') != std::string::npos) return which + ": parameter $" + nth(p) + " contains a NUL byte";
    if (!valid_utf8(*value)) return which + ": parameter $" + nth(p) + " is not valid UTF-8";
  }
  return std::nullopt;
}

SettleItem failed_attempt(const Check& check, const GuardLimits& limits, const Judging& judging, std::string reason,
                          std::optional<std::int64_t> run_micros) {
  return {.id = check.id,
          .due = check.slot,
          .settlement = clamped(judge(RunOutcome{.failed = true, .error = std::move(reason)}, check, limits,
                                      judging.grid),
                                judging.earliest),
          .run_micros = run_micros};
}

std::vector<SettleItem> settlements_of(std::span<const Check> checks, std::span<const WorkUnit> units,
                                       std::span<const UnitResult> results, std::span<const GuardLimits> limits,
                                       const Judging& judging) {
  std::vector<SettleItem> items;
  items.reserve(checks.size());
  for (std::size_t u = 0; u < units.size(); ++u) {
    const UnitResult& result = results[u];
    if (!result.ran) continue;  // not reached: stays due, claimed again
    const WorkUnit& unit = units[u];
    const std::int64_t micros = result.micros / static_cast<std::int64_t>(unit.count);
    // A group's writes settle with its first check; writes that cannot be sent fail that check alone.
    std::optional<std::string> writes_refused;
    for (std::size_t w = 0; w < result.writes.size() && !writes_refused && !result.failed; ++w) {
      writes_refused = write_problem(result.writes[w], w);
    }
    for (std::size_t k = 0; k < unit.count; ++k) {
      const Check& check = checks[unit.first + k];
      if (result.failed) {
        items.push_back(failed_attempt(check, limits[u], judging, result.error, micros));
        continue;
      }
      if (!result.check_failures.empty() && result.check_failures[k]) {
        items.push_back(failed_attempt(check, limits[u], judging, *result.check_failures[k], micros));
        continue;
      }
      if (k == 0 && writes_refused) {
        items.push_back(failed_attempt(check, limits[u], judging, *writes_refused, micros));
        continue;
      }
      const JobResult& answer = result.results[k];
      if (answer.events.size() > kMaxEventsPerRun) {
        items.push_back(failed_attempt(check, limits[u], judging,
                                       "the job returned " + std::to_string(answer.events.size()) +
                                           " events (at most " + std::to_string(kMaxEventsPerRun) + ")",
                                       micros));
        continue;
      }
      SettleItem item{.id = check.id,
                      .due = check.slot,
                      .settlement = clamped(judge(RunOutcome{.next = answer.next}, check, limits[u], judging.grid),
                                            judging.earliest),
                      .run_micros = micros};
      std::optional<std::string> refused;
      for (std::size_t e = 0; e < answer.events.size() && !refused; ++e) {
        OutboxEvent event = outbox_event(answer.events[e], e, check, item.settlement.check_count);
        if (event.record) item.events.push_back(std::move(*event.record));
        else refused = std::move(event.problem);
      }
      if (answer.payload_update && !refused) {
        if (!answer.payload_update->is_object()) {
          refused = "the job's payload update is not a JSON object";
        } else {
          StoredJson update = stored_payload(*answer.payload_update, "the job's payload update", kMaxEventPayloadBytes);
          if (update.text) item.payload_update = std::move(update.text);
          else refused = std::move(update.problem);
        }
      }
      if (refused) {
        items.push_back(failed_attempt(check, limits[u], judging, *refused, micros));
        continue;
      }
      if (k == 0) item.writes = result.writes;
      items.push_back(std::move(item));
    }
  }
  return items;
}

}  // namespace prescient::runner
