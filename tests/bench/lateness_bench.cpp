// Lateness: a real daemon on the system clock and a 1-second grid. Before each of `slots` boundaries,
// `checks` checks are put at it; measured from the boundary: when the first of them starts running
// (the claim precedes it by one statement), and when the last one's settlement is committed (seen by
// a separate session polling every 2 ms, as the peers' lateness phase does).
#include <algorithm>
#include <atomic>
#include <limits>
#include <thread>

#include "bench_support.hpp"
#include "prescient/clock.hpp"
#include "prescient/daemon.hpp"
#include "prescient/database.hpp"
#include "prescient/job_classes.hpp"
#include "prescient/time_text.hpp"

namespace prescient::bench {
namespace {

std::atomic<std::int64_t> first_start_us{std::numeric_limits<std::int64_t>::max()};

// noop that remembers the earliest wall-clock instant any check of it started.
class Stamp final : public JobExec {
 public:
  JobResult run(const Check&, JobContext&) override {
    const std::int64_t now = to_unix_micros(SystemClock().now());
    std::int64_t seen = first_start_us.load();
    while (now < seen && !first_start_us.compare_exchange_weak(seen, now)) {
    }
    return {};
  }
};

double percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  const auto at = static_cast<std::size_t>(p * static_cast<double>(values.size() - 1) + 0.5);
  return values[std::min(at, values.size() - 1)];
}

}  // namespace

void add_lateness_classes(Registry& registry) {
  registry.add("stamp", [] { return std::make_unique<Stamp>(); });
}

void lateness(const std::string& url, const Registry& registry, int slots, long checks) {
  if (url.empty()) throw std::runtime_error("lateness needs --db-1s (a database on a 1 s grid)");
  auto db = connect(url);
  reset(*db);
  SystemClock clock;
  declare_job_classes(*db, registry, "prescient_bench", clock.now());  // as a runner does at its start
  SystemWaiter waiter(clock);
  Daemon daemon({.database_url = url, .runner_id = "bench-daemon", .workers = 2}, registry, clock, waiter);
  std::thread running([&] { daemon.run(); });

  std::vector<double> to_first_ms, to_last_ms;
  Client client(*db, {.clock = &clock});
  for (int s = 0; s < slots; ++s) {
    // The boundary at least 1.5 s ahead: time to enqueue and to be idle again before it.
    const TimePoint boundary = std::chrono::ceil<std::chrono::seconds>(clock.now() + std::chrono::milliseconds{1500});
    std::vector<ScheduleRequest> requests;
    for (long i = 0; i < checks; ++i) requests.push_back(request("stamp", s * checks + i, boundary));
    client.schedule_many(requests);
    if (clock.now() >= boundary) throw std::runtime_error("lateness: enqueueing took past the boundary");
    first_start_us = std::numeric_limits<std::int64_t>::max();
    std::this_thread::sleep_until(std::chrono::system_clock::time_point(boundary.time_since_epoch()));
    long left = checks;
    const std::string at = format_time(boundary);  // soci::use binds by reference
    while (left > 0) {
      *db << "SELECT count(*) FROM prescient.future_job WHERE next_check_at = :b", soci::into(left), soci::use(at);
      if (left > 0) std::this_thread::sleep_for(std::chrono::milliseconds{2});
    }
    const double done_ms = std::chrono::duration<double, std::milli>(clock.now() - boundary).count();
    to_last_ms.push_back(done_ms);
    to_first_ms.push_back(static_cast<double>(first_start_us.load() - to_unix_micros(boundary)) / 1000.0);
  }
  waiter.stop();
  running.join();
  const auto ms = [](double v) { return std::to_string(static_cast<int>(v + 0.5)) + " ms"; };
  report("daemon lateness, " + std::to_string(checks) + " due at a boundary, " + std::to_string(slots) + " slots",
         checks, percentile(to_last_ms, 0.5) / 1000.0,
         {{"first_start_ms_p50", percentile(to_first_ms, 0.5)},
          {"first_start_ms_p99", percentile(to_first_ms, 0.99)},
          {"all_committed_ms_p50", percentile(to_last_ms, 0.5)},
          {"all_committed_ms_p99", percentile(to_last_ms, 0.99)},
          {"note", "first start p50 " + ms(percentile(to_first_ms, 0.5)) + ", p99 " + ms(percentile(to_first_ms, 0.99)) +
                       "; all committed p50 " + ms(percentile(to_last_ms, 0.5)) + ", p99 " +
                       ms(percentile(to_last_ms, 0.99))}});
}

}  // namespace prescient::bench
