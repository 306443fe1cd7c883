// Scale: the cost of firing a slot must follow the due checks, not the table. The pending table is
// grown to each size with checks spread over a year of 1-minute slots, 10 000 checks are put at the
// bench slot, and that slot is fired; the claim's plan is printed too.
#include "bench_support.hpp"
#include "prescient/clock.hpp"
#include "prescient/slot_runner.hpp"
#include "prescient/store.hpp"
#include "prescient/time_text.hpp"

namespace prescient::bench {
namespace {

constexpr long kDue = 10000;

// Rows `from`..`to`-1 of the background: one per pseudo-random minute of the year after the bench slot
// (never the bench slot itself), inserted by the server in chunks so no statement holds millions.
void grow(soci::session& db, long from, long to) {
  const std::string slot = format_time(bench_slot());  // soci::use binds by reference: named, not temporary
  for (long chunk = from; chunk < to; chunk += 1000000) {
    const long last = std::min(to, chunk + 1000000) - 1;
    db << "INSERT INTO prescient.future_job (job, entity_name, entity_key, payload, first_check_at, next_check_at,"
          "    enqueued_on, enqueued_by)"
          " SELECT 'noop', 'background', i::text, '{}', t, t, now(), 'bench'"
          "   FROM generate_series(:from_row::bigint, :to_row::bigint) i,"
          "        LATERAL (SELECT :slot::timestamptz + ((i * 7919) % 525600 + 1) * interval '1 minute' AS t) x",
        soci::use(chunk), soci::use(last), soci::use(slot);
  }
  db << "VACUUM ANALYZE prescient.future_job";
  db << "CHECKPOINT";
}

}  // namespace

void scale(const std::string& url, soci::session& db, const Registry& registry, const std::vector<long>& sizes) {
  reset(db);
  long rows = 0;
  double first_seconds = 0;
  for (const long size : sizes) {
    const auto grow_start = Steady::now();
    grow(db, rows, size);
    const double grow_seconds = seconds_since(grow_start);
    rows = size;
    load(db, "noop", kDue, bench_slot());
    ManualClock at_slot(bench_slot());
    const std::string plan = Store(db).claim_plan(bench_slot(), bench_slot());
    SlotRunner runner({.database_url = url, .runner_id = "bench", .workers = 2}, registry, at_slot);
    const SlotReport r = runner.run_slot(bench_slot());
    if (r.claimed != kDue) throw std::runtime_error("scale: fired " + std::to_string(r.claimed) + " of 10000");
    if (first_seconds == 0) first_seconds = r.seconds;
    report("scale, fire 10000 due among " + std::to_string(size) + " pending", kDue, r.seconds,
           {{"pending", size},
            {"ratio_to_smallest", r.seconds / first_seconds},
            {"index_lookup", plan.find("Index Scan") != std::string::npos},
            {"plan", plan},
            {"seconds_to_grow", grow_seconds},
            {"note", "x" + std::to_string(r.seconds / first_seconds).substr(0, 4) + " the first size's time, " +
                         (plan.find("Index Scan") != std::string::npos ? "index lookup" : "NOT an index lookup")}});
  }
}

}  // namespace prescient::bench
