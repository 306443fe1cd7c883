// prescient_bench: throughput figures for scripts/bench.sh. Not a test: it asserts nothing but that
// every check it drains is settled, and prints figures (one JSON object per measure on stdout).
//   prescient_bench --db URL [--n 100000]
// The database must be migrated and otherwise unused: the bench truncates prescient's tables.
#include <soci/soci.h>

#include <atomic>
#include <chrono>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "builtin_jobs.hpp"
#include "prescient/client.hpp"
#include "prescient/database.hpp"
#include "prescient/slot_runner.hpp"
#include "prescient/time_text.hpp"

using namespace prescient;
using Steady = std::chrono::steady_clock;

namespace {

// Half of the checks (even ids) ask to be looked at again in an hour: the reschedule path.
class HalfAgain final : public JobExec {
 public:
  JobResult run(const Check& check, JobContext& ctx) override {
    if (check.id % 2 == 0) return {.next = ctx.slot() + std::chrono::hours{1}};
    return {};
  }
};

const TimePoint kSlot = parse_time("2030-01-01T00:00:00Z");

void reset(soci::session& db) {
  db << "TRUNCATE prescient.future_job, prescient.job_history, prescient.event";
  db << "VACUUM ANALYZE prescient.future_job";
  db << "CHECKPOINT";
}

// CPU time spent by the whole machine (client, server and the rest), from /proc/stat: on a machine
// the drain saturates, CPU-seconds per check is a steadier figure than wall time.
double machine_cpu_seconds() {
  std::ifstream stat("/proc/stat");
  std::string cpu;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0;
  stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq;
  return (user + nice + system + irq + softirq) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double seconds_since(Steady::time_point start) { return std::chrono::duration<double>(Steady::now() - start).count(); }

void report(const std::string& measure, long checks, double seconds, const nlohmann::json& extra = {}) {
  nlohmann::json line{{"measure", measure}, {"checks", checks}, {"seconds", seconds},
                      {"checks_per_second", checks / seconds}};
  for (const auto& [k, v] : extra.items()) line[k] = v;
  std::cout << line << std::endl;
}

ScheduleRequest request(const char* job, long i) {
  return {.job = job, .entity = "bench", .entity_key = std::to_string(i), .at = kSlot, .payload = {{"n", i}}};
}

void enqueue_single(const std::string& url, long n, int threads) {
  ManualClock clock(kSlot - std::chrono::hours{1});
  std::atomic<long> next{0};
  const auto start = Steady::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      auto db = connect(url);
      Client client(*db, {.clock = &clock});
      for (long i; (i = next++) < n;) client.schedule(request("noop", i));
    });
  }
  for (auto& t : pool) t.join();
  report("enqueue single, " + std::to_string(threads) + " thread(s)", n, seconds_since(start));
}

void enqueue_bulk(soci::session& db, long n, long batch) {
  ManualClock clock(kSlot - std::chrono::hours{1});
  Client client(db, {.clock = &clock});
  std::vector<ScheduleRequest> requests;
  const auto start = Steady::now();
  for (long i = 0; i < n; ++i) {
    requests.push_back(request("noop", i));
    if (static_cast<long>(requests.size()) == batch || i == n - 1) {
      client.schedule_many(requests);
      requests.clear();
    }
  }
  report("enqueue bulk, " + std::to_string(batch) + " per call", n, seconds_since(start));
}

void drain(const std::string& url, soci::session& db, const Registry& registry, const char* job, long n, int workers) {
  reset(db);
  {
    ManualClock before(kSlot - std::chrono::hours{1});
    Client client(db, {.clock = &before});
    std::vector<ScheduleRequest> requests;
    for (long i = 0; i < n; ++i) requests.push_back(request(job, i));
    for (std::size_t at = 0; at < requests.size(); at += 10000) {
      client.schedule_many(std::span(requests).subspan(at, std::min<std::size_t>(10000, requests.size() - at)));
    }
    db << "VACUUM ANALYZE prescient.future_job";
    db << "CHECKPOINT";
  }
  ManualClock at_slot(kSlot);
  SlotRunner runner({.database_url = url, .runner_id = "bench", .workers = workers}, registry, at_slot);
  const double cpu_before = machine_cpu_seconds();
  const SlotReport r = runner.run_slot(kSlot);
  const double cpu = machine_cpu_seconds() - cpu_before;
  if (r.claimed != n) throw std::runtime_error("drained " + std::to_string(r.claimed) + " of " + std::to_string(n));
  report(std::string("slot drain, ") + job + ", " + std::to_string(workers) + " worker(s)", n, r.seconds,
         {{"rescheduled", r.rescheduled}, {"events", r.events}, {"machine_cpu_us_per_check", cpu * 1e6 / n}});
}

}  // namespace

int main(int argc, char** argv) {
  std::string url;
  long n = 100000;
  std::string only = "enqueue,drain";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--db") == 0) url = argv[i + 1];
    else if (std::strcmp(argv[i], "--n") == 0) n = std::stol(argv[i + 1]);
    else if (std::strcmp(argv[i], "--only") == 0) only = argv[i + 1];
  }
  const auto wanted = [&](const std::string& part) { return ("," + only + ",").find("," + part + ",") != std::string::npos; };
  try {
    Registry registry;
    register_builtin_jobs(registry);
    registry.add("half_again", [] { return std::make_unique<HalfAgain>(); });
    auto db = connect(url);
    if (wanted("enqueue")) {
      const long singles = std::min(n, 5000L);
      reset(*db);
      enqueue_single(url, singles, 1);
      reset(*db);
      enqueue_single(url, singles, 16);
      for (const long batch : {1000L, 10000L}) {
        reset(*db);
        enqueue_bulk(*db, n, batch);
      }
    }
    if (wanted("drain")) {
      for (const int workers : {1, 2, 4}) drain(url, *db, registry, "noop", n, workers);
      drain(url, *db, registry, "half_again", n, 2);
      drain(url, *db, registry, "emit", n, 2);
    }
    if (wanted("drain2")) drain(url, *db, registry, "noop", n, 2);
    if (wanted("bulk")) {
      reset(*db);
      enqueue_bulk(*db, n, 1000);
    }
    reset(*db);
  } catch (const std::exception& e) {
    std::cerr << "prescient_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
