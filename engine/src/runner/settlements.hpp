#pragma once
// Internal, pure: from what a batch's jobs answered to what the settlement writes. This is the job
// boundary: everything a job hands back (its next time, its error text, its events, its buffered writes)
// is judged, made storable or refused here, so what reaches SQL is storable and a bad answer fails its
// own check, never the batch. No clock, no database: the runner passes everything in.
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runner/guards.hpp"
#include "db/store.hpp"
#include "runner/work_unit.hpp"

namespace prescient::detail {

// What one job run may hand back: more events than this, or an event payload bigger than this, fails
// its check. (cron's catch-up `all` emits at most 10 000 occurrences in one run.)
inline constexpr std::size_t kMaxEventsPerRun = 10000;
inline constexpr std::size_t kMaxEventPayloadBytes = 16 * 1024 * 1024;

// How a batch's checks are judged: their class's limits, the grid, and the earliest time a check may be
// put back to (the next boundary from now: a late run never reschedules into the past).
struct Judging {
  const SlotGrid& grid;
  TimePoint earliest;
};

// The settlement of each check the units reached, in check order: judged by its class's limits
// (`limits[u]` for unit u), events given their deterministic ids and made storable, or the check failed
// with the reason when its answer cannot be stored.
std::vector<SettleItem> settlements_of(std::span<const Check> checks, std::span<const WorkUnit> units,
                                       std::span<const UnitResult> results, std::span<const GuardLimits> limits,
                                       const Judging& judging);

// A check that failed without its job's answer being used (its writes failed, the database refused its
// settlement, its row could not be read): a failed attempt with `reason`, no events, no writes.
SettleItem failed_attempt(const Check& check, const GuardLimits& limits, const Judging& judging, std::string reason,
                          std::optional<std::int64_t> run_micros = std::nullopt);

// The event as the outbox stores it, or why it cannot be stored: the id (given, or "<check id>-<check
// count>[-n]" for the n-th event of the run) must be a valid name; type and source are made storable
// (an empty type is refused); occurred_at must lie within years 1 to 9999; the payload must hold valid
// UTF-8 without NUL and serialize to at most kMaxEventPayloadBytes.
struct OutboxEvent {
  std::optional<EventRecord> record;
  std::string problem;  // when !record
};
OutboxEvent outbox_event(const Event& event, std::size_t index, const Check& check, int check_count_after);

// Why a buffered write cannot be sent (libpq cuts text at a NUL; the server refuses invalid UTF-8), or
// nothing.
std::optional<std::string> write_problem(const BufferedWrite& write, std::size_t index);

}  // namespace prescient::detail
