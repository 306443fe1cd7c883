// Scale: the cost of firing a slot must follow the due checks, not the table. The pending table is
// grown to each size with checks spread over a year of 1-minute slots, 10 000 checks are put at the
// bench slot, and that slot is fired; the claim's plan is printed too.
#include <cstdio>

#include "bench_support.hpp"
#include "prescient/clock.hpp"
#include "prescient/slot_runner.hpp"
#include "db/pg_runner_store.hpp"
#include "prescient/checks.hpp"
#include "prescient/settings.hpp"
#include "prescient/time_text.hpp"

namespace prescient::bench {

using namespace prescient::db;
namespace {

constexpr long kDue = 10000;

// Rows `from`..`to`-1 of the background: one per pseudo-random minute of the year after the bench slot
// (never the bench slot itself), inserted by the server in chunks so no statement holds millions.
void grow(soci::session& db, long from, long to) {
  const std::string slot = format_time(bench_slot());  // soci::use binds by reference: named, not temporary
  in_chunks(from, to, [&](long first, long last) {
    db << "INSERT INTO prescient.future_job (job, entity_name, entity_key, payload, first_check_at, next_check_at,"
          "    enqueued_on, enqueued_by)"
          " SELECT 'noop', 'background', i::text, '{}', t, t, now(), 'bench'"
          "   FROM generate_series(:from_row::bigint, :to_row::bigint) i,"
          "        LATERAL (SELECT :slot::timestamptz + ((i * 7919) % 525600 + 1) * interval '1 minute' AS t) x",
        soci::use(first), soci::use(last), soci::use(slot);
  });
  db << "VACUUM ANALYZE prescient.future_job";
  db << "CHECKPOINT";
}

}  // namespace

void scale(const std::string& url, soci::session& db, const Registry& registry, const std::vector<long>& sizes,
           int reps) {
  reset(db);
  long rows = 0;
  double first_seconds = 0;
  for (const long size : sizes) {
    const auto grow_start = Steady::now();
    grow(db, rows, size);
    const double grow_seconds = seconds_since(grow_start);
    rows = size;
    const std::string plan = PgRunnerStore(db).claim_plan(bench_slot(), bench_slot());
    const bool index_lookup = plan.find("Index Scan") != std::string::npos;
    std::vector<Run> runs;
    for (int r = 0; r < reps; ++r) {
      load(db, "noop", kDue, bench_slot());
      ManualClock at_slot(bench_slot());
      SlotRunner runner({.database_url = url, .runner_id = "bench", .workers = 2}, registry, at_slot);
      const SlotReport fired = runner.run_slot(bench_slot());
      if (fired.claimed != kDue) throw std::runtime_error("scale: fired " + std::to_string(fired.claimed) + " of 10000");
      runs.push_back({.seconds = fired.seconds});
    }
    const double median = median_of(runs).seconds;
    if (first_seconds == 0) first_seconds = median;
    const double ratio = median / first_seconds;
    char note[96];
    std::snprintf(note, sizeof note, "x%.2f the first size's time, %s", ratio,
                  index_lookup ? "index lookup" : "NOT an index lookup");
    for (Run& run : runs) {
      run.extra = {{"pending", size}, {"ratio_to_smallest", ratio}, {"index_lookup", index_lookup}, {"plan", plan},
                   {"seconds_to_grow", grow_seconds}, {"note", note}};
    }
    report_median_of("scale, fire 10000 due among " + std::to_string(size) + " pending", kDue, std::move(runs));
  }
}

}  // namespace prescient::bench
