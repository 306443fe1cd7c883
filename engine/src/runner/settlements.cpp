#include "runner/settlements.hpp"

#include <algorithm>
#include <limits>

#include "core/text_rules.hpp"

namespace prescient::runner {

using namespace prescient::core;


SettledCounts& SettledCounts::operator+=(const SettledCounts& other) {
  checks += other.checks;
  events += other.events;
  done += other.done;
  rescheduled += other.rescheduled;
  retried += other.retried;
  failed += other.failed;
  guarded += other.guarded;
  return *this;
}

void tally(const SettledCounts& settled, SlotReport& report) {
  report.events += settled.events;
  report.done += settled.done;
  report.rescheduled += settled.rescheduled;
  report.retried += settled.retried;
  report.failed += settled.failed;
  report.guarded += settled.guarded;
}

}  // namespace prescient::runner

namespace prescient::runner {
namespace {

// Years 1 to 9999: what PostgreSQL and ISO-8601 text both hold.
const TimePoint kEarliestEventTime = from_unix_micros(-62135596800LL * 1000000);
const TimePoint kLatestEventTime = from_unix_micros(253402300799LL * 1000000 + 999999);

std::string nth(std::size_t index) { return std::to_string(index + 1); }

RanCheck ran_check(const Check& check, const GuardLimits& limits) {
  return {.job = check.job, .slot = check.slot, .asked_for = check.asked_for, .check_count = check.check_count,
          .attempts = check.attempts, .own = check.policy, .limits = limits};
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

namespace {

// The spaces jsonb's text puts after each ':' and ',' of a value, which the compact text leaves out.
std::size_t jsonb_separator_spaces(const nlohmann::json& value) {
  std::size_t spaces = 0;
  if (value.is_object() && !value.empty()) spaces = 2 * value.size() - 1;
  else if (value.is_array() && !value.empty()) spaces = value.size() - 1;
  else return 0;
  for (const auto& member : value) spaces += jsonb_separator_spaces(member);
  return spaces;
}

}  // namespace

std::size_t jsonb_text_bytes(const nlohmann::json& value) {
  return value.dump().size() + jsonb_separator_spaces(value);
}

StoredJson stored_result(const nlohmann::json& result) {
  if (auto problem = payload_text_problem(result)) return {.problem = "its result: " + *problem};
  std::string text = result.dump();
  if (const std::size_t bytes = text.size() + jsonb_separator_spaces(result); bytes > kMaxResultBytes) {
    return {.problem = "its result is " + std::to_string(bytes) + " bytes of JSON (at most " +
                       std::to_string(kMaxResultBytes) + ")"};
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
              .payload = std::move(*payload.text),
              .traceparent = check.traceparent}};
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

SettleItem failed_attempt(const Check& check, const GuardLimits& limits, std::string reason,
                          std::optional<std::int64_t> run_micros) {
  // Made storable (valid UTF-8, no NUL), not cut: the judge cuts it, as it does a worker's.
  return {.id = check.id,
          .due = check.slot,
          .check = ran_check(check, limits),
          .answer = {.failed = true, .error = storable_text(reason, std::numeric_limits<std::size_t>::max())},
          .run_micros = run_micros};
}

std::vector<SettleItem> settlements_of(std::span<const Check> checks, std::span<const WorkUnit> units,
                                       std::span<const UnitResult> results, std::span<const GuardLimits> limits) {
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
        items.push_back(failed_attempt(check, limits[u], result.error, micros));
        continue;
      }
      if (!result.check_failures.empty() && result.check_failures[k]) {
        items.push_back(failed_attempt(check, limits[u], *result.check_failures[k], micros));
        continue;
      }
      if (k == 0 && writes_refused) {
        items.push_back(failed_attempt(check, limits[u], *writes_refused, micros));
        continue;
      }
      const JobResult& answer = result.results[k];
      if (answer.events.size() > kMaxEventsPerRun) {
        items.push_back(failed_attempt(check, limits[u],
                                       "the job returned " + std::to_string(answer.events.size()) +
                                           " events (at most " + std::to_string(kMaxEventsPerRun) + ")",
                                       micros));
        continue;
      }
      if (answer.next && answer.next_in_business_time) {
        items.push_back(failed_attempt(check, limits[u],
                                       "the job answered both a next time and one in business time: give one", micros));
        continue;
      }
      SettleItem item{.id = check.id,
                      .due = check.slot,
                      .check = ran_check(check, limits[u]),
                      .answer = {.next = answer.next, .in_business_time = answer.next_in_business_time},
                      .run_micros = micros};
      std::optional<std::string> refused;
      for (std::size_t e = 0; e < answer.events.size() && !refused; ++e) {
        OutboxEvent event = outbox_event(answer.events[e], e, check, check.check_count + 1);
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
      if (answer.result && !refused) {
        StoredJson result = stored_result(*answer.result);
        if (result.text) item.result = std::move(result.text);
        else refused = std::move(result.problem);
      }
      if (refused) {
        items.push_back(failed_attempt(check, limits[u], *refused, micros));
        continue;
      }
      if (k == 0) item.writes = result.writes;
      items.push_back(std::move(item));
    }
  }
  return items;
}

}  // namespace prescient::runner
