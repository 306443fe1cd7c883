#include "bench_support.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <span>

#include "prescient/clock.hpp"
#include "prescient/time_text.hpp"

namespace prescient::bench {

TimePoint bench_slot() { return parse_time("2030-01-01T00:00:00Z"); }

void reset(soci::session& db) {
  db << "TRUNCATE prescient.future_job, prescient.job_history, prescient.event, prescient.cron_schedule";
  db << "VACUUM ANALYZE prescient.future_job";
  db << "CHECKPOINT";
}

double seconds_since(Steady::time_point start) { return std::chrono::duration<double>(Steady::now() - start).count(); }

void in_chunks(long from, long to, const std::function<void(long first, long last)>& insert) {
  for (long chunk = from; chunk < to; chunk += 1000000) insert(chunk, std::min(to, chunk + 1000000) - 1);
}

double machine_cpu_seconds() {
  std::ifstream stat("/proc/stat");
  std::string cpu;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0;
  stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq;
  return (user + nice + system + irq + softirq) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

void report(const std::string& measure, long checks, double seconds, const nlohmann::json& extra) {
  nlohmann::json line{{"measure", measure}, {"checks", checks}, {"seconds", seconds},
                      {"checks_per_second", checks / seconds}};
  for (const auto& [k, v] : extra.items()) line[k] = v;
  std::cout << line << std::endl;
}

const Run& median_of(std::vector<Run>& runs) {
  std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) { return a.seconds < b.seconds; });
  return runs[runs.size() / 2];
}

void report_median_of(const std::string& measure, long checks, std::vector<Run> runs) {
  const Run& median = median_of(runs);
  nlohmann::json extra = median.extra;
  extra["reps"] = runs.size();
  extra["min_checks_per_second"] = checks / runs.back().seconds;
  extra["max_checks_per_second"] = checks / runs.front().seconds;
  report(measure, checks, median.seconds, extra);
}

ScheduleRequest request(const char* job, long i, TimePoint at) {
  return {.job = job, .entity_name = "bench", .entity_key = std::to_string(i), .at = at, .payload = {{"n", i}}};
}

void load(soci::session& db, const char* job, long n, TimePoint at) {
  load(db, n, at, [&](long i) { return request(job, i, at); });
}

void load(soci::session& db, long n, TimePoint at, const std::function<ScheduleRequest(long)>& make) {
  ManualClock before(at - std::chrono::hours{1});
  Client client(db, {.clock = &before});
  std::vector<ScheduleRequest> requests;
  for (long i = 0; i < n; ++i) requests.push_back(make(i));
  for (std::size_t from = 0; from < requests.size(); from += 10000) {
    client.schedule_many(std::span(requests).subspan(from, std::min<std::size_t>(10000, requests.size() - from)));
  }
  db << "VACUUM ANALYZE prescient.future_job";
  db << "CHECKPOINT";
}

}  // namespace prescient::bench
