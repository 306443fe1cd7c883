#pragma once
// Shared by the measures of prescient_bench: the fixed slot, timing, CPU accounting and the one-line
// JSON report each measure prints.
#include <soci/soci.h>

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "prescient/client.hpp"
#include "prescient/registry.hpp"
#include "prescient/time.hpp"

namespace prescient::bench {

using Steady = std::chrono::steady_clock;

// The slot every throughput measure fires: far enough ahead that nothing else is due there.
TimePoint bench_slot();

// Empties prescient's tables (the bench owns its database) and leaves them vacuumed and checkpointed,
// so a measure does not pay for the previous one's garbage.
void reset(soci::session& db);

double seconds_since(Steady::time_point start);

// Rows from..to-1 in chunks of a million, so that no statement inserts millions: insert(first, last) for each
// chunk, both ends included.
void in_chunks(long from, long to, const std::function<void(long first, long last)>& insert);

// CPU time spent by the whole machine (client, server and the rest), from /proc/stat: on a machine
// the measure saturates, CPU-seconds per check is a steadier figure than wall time.
double machine_cpu_seconds();

// Prints one JSON object: measure, checks, seconds, checks_per_second and the extra fields.
void report(const std::string& measure, long checks, double seconds, const nlohmann::json& extra = {});

// One timed run of a measure: its seconds and the figures it adds to the report.
struct Run {
  double seconds = 0;
  nlohmann::json extra = nlohmann::json::object();
};
// Sorts the runs by seconds and returns the median one. REQUIRES: runs is not empty.
const Run& median_of(std::vector<Run>& runs);
// Reports the median run with the spread of the rates: min_checks_per_second, max_checks_per_second and
// reps. One run of a measure on this machine can be 15 % off the next; the median of several is the
// figure to compare.
void report_median_of(const std::string& measure, long checks, std::vector<Run> runs);
// Runs `once` `reps` times and reports the median run.
template <class Once>
void report_median(const std::string& measure, long checks, int reps, Once once) {
  std::vector<Run> runs;
  for (int r = 0; r < reps; ++r) runs.push_back(once());
  report_median_of(measure, checks, std::move(runs));
}

// A check of class `job` for entity bench/<i> at `at`, with a small payload.
ScheduleRequest request(const char* job, long i, TimePoint at);

// Puts n checks of class `job` at `at` through schedule_many (10 000 per call), as of an hour before.
void load(soci::session& db, const char* job, long n, TimePoint at);
// The same for checks made by `make` (the i-th of n), each due at `at`.
void load(soci::session& db, long n, TimePoint at, const std::function<ScheduleRequest(long)>& make);

// The measures beyond throughput, each in its own file.
void scale(const std::string& url, soci::session& db, const Registry& registry, const std::vector<long>& sizes,
           int reps);
void add_lateness_classes(Registry& registry);  // `stamp`, the class the lateness measure runs
void lateness(const std::string& url_1s_grid, const Registry& registry, int slots, long checks);
void schedules(const std::string& url, soci::session& db, const Registry& registry, long count, int slots);
void dashboard(const std::string& url, soci::session& db, long rows);
void http(const std::string& url, soci::session& db, long n, int reps);  // the http class against a local receiver

}  // namespace prescient::bench
