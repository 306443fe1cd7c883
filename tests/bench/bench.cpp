// prescient_bench: the figures behind scripts/bench.sh. Not a test: it checks only that each measure
// did all its work (every check drained, every slot fired) and prints one JSON object per measure.
//   prescient_bench --db URL [--n 100000] [--reps 3] [--only enqueue,drain,scale,lateness,schedules,dashboard,http]
//                   [--scale 1000000,10000000] [--db-1s URL] [--schedules 100000] [--dashboard 10000000]
//                   [--prepared-statements auto|on|off]   (the drain's runner; for runs through PgBouncer)
// Throughput measures run --reps times; each prints its median run and the spread.
// The databases must be migrated and otherwise unused: the bench truncates prescient's tables.
// --db-1s is a second database on a 1 s grid, for the daemon's lateness (the main one is on 1 min).
#include <atomic>
#include <cstring>
#include <iostream>
#include <sstream>
#include <spdlog/spdlog.h>
#include <thread>

#include "bench_support.hpp"
#include "builtin_jobs.hpp"
#include "prescient/clock.hpp"
#include "prescient/client.hpp"
#include "prescient/database.hpp"
#include "prescient/flow_limits.hpp"
#include "prescient/job_classes.hpp"
#include "prescient/slot_runner.hpp"

using namespace prescient;
using namespace prescient::jobs;
using namespace prescient::bench;

namespace {

// Half of the checks (even ids) ask to be looked at again in an hour: the reschedule path.
class HalfAgain final : public JobExec {
 public:
  JobResult run(const Check& check, JobContext& ctx) override {
    if (check.id % 2 == 0) return {.next = ctx.slot() + std::chrono::hours{1}};
    return {};
  }
};

// splitmix64's finaliser: ids in a row spread evenly, the same ids the same way in every run.
std::uint64_t scrambled(std::int64_t id) {
  std::uint64_t z = static_cast<std::uint64_t>(id) + 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// One check in 1 000, at random positions.
bool one_in_a_thousand(const Check& check) { return scrambled(check.id) % 1000 == 0; }

// Emits one event per check; for one check in 1 000 a type that a constraint (added by the measure)
// refuses: the cost of a refused settlement.
class OneInAThousandRefused final : public JobExec {
 public:
  JobResult run(const Check& check, JobContext&) override {
    return {.events = {{.type = one_in_a_thousand(check) ? "refused" : "fine"}}};
  }
};

// Emits one event per check, and throws for one check in 1 000: the cost of a failing job.
class OneInAThousandThrows final : public JobExec {
 public:
  JobResult run(const Check& check, JobContext&) override {
    if (one_in_a_thousand(check)) throw std::runtime_error("one in a thousand");
    return {.events = {{.type = "fine"}}};
  }
};

Run enqueue_single(const std::string& url, soci::session& db, long n, int threads) {
  reset(db);
  ManualClock clock(bench_slot() - std::chrono::hours{1});
  std::atomic<long> next{0};
  const auto start = Steady::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      auto session = connect(url);
      Client client(*session, {.clock = &clock});
      for (long i; (i = next++) < n;) client.schedule(request("noop", i, bench_slot()));
    });
  }
  for (auto& t : pool) t.join();
  return {.seconds = seconds_since(start)};
}

// With `calendar`, each check is due 4 hours of its open time after the bench slot (docs/business-time.md).
Run enqueue_bulk(soci::session& db, long n, long batch, const std::optional<std::string>& calendar = std::nullopt) {
  reset(db);
  ManualClock clock(bench_slot() - std::chrono::hours{1});
  Client client(db, {.clock = &clock});
  std::vector<ScheduleRequest> requests;
  const auto start = Steady::now();
  for (long i = 0; i < n; ++i) {
    requests.push_back(request("noop", i, bench_slot()));
    if (calendar) {
      requests.back().calendar = calendar;
      requests.back().business_delay = "4h";
    }
    if (static_cast<long>(requests.size()) == batch || i == n - 1) {
      client.schedule_many(requests);
      requests.clear();
    }
  }
  return {.seconds = seconds_since(start)};
}

// How the drain's runner prepares its statements (--prepared-statements; measured behind PgBouncer).
StatementPreparation drain_preparation = StatementPreparation::automatic;

// Fires the bench slot, whose n checks are loaded, with `workers` and times it.
Run drain_loaded(const std::string& url, const Registry& registry, long n, int workers) {
  ManualClock at_slot(bench_slot());
  SlotRunner runner({.database_url = url, .runner_id = "bench", .workers = workers, .batch_size = 1000, .statement_preparation = drain_preparation},
                    registry, at_slot);
  const double cpu_before = machine_cpu_seconds();
  const SlotReport r = runner.run_slot(bench_slot());
  const double cpu = machine_cpu_seconds() - cpu_before;
  if (r.claimed != n) throw std::runtime_error("drained " + std::to_string(r.claimed) + " of " + std::to_string(n));
  return {.seconds = r.seconds,
          .extra = {{"rescheduled", r.rescheduled}, {"events", r.events}, {"machine_cpu_us_per_check", cpu * 1e6 / n}}};
}

Run drain(const std::string& url, soci::session& db, const Registry& registry, const char* job, long n, int workers) {
  reset(db);
  load(db, job, n, bench_slot());
  return drain_loaded(url, registry, n, workers);
}

// The drain of n noop checks of `tenants` tenants (payload.tenant, interleaved by id), with or without a
// fair-share limit on the tenant: what fair share's claim costs against the plain one.
Run drain_tenants(const std::string& url, soci::session& db, const Registry& registry, long n, int workers, bool fair,
                  int tenants) {
  reset(db);
  db << "DELETE FROM prescient.flow_limit";
  if (fair) FlowLimits(db).set({.name = "tenants", .key = "payload.tenant", .fair_share = true}, "bench", bench_slot());
  db << "SELECT prescient.sync_fair_share_indexes()";
  load(db, n, bench_slot(), [&](long i) {
    ScheduleRequest r = request("noop", i, bench_slot());
    r.payload["tenant"] = "tenant-" + std::to_string(i % tenants);
    return r;
  });
  const Run run = drain_loaded(url, registry, n, workers);
  db << "DELETE FROM prescient.flow_limit";
  db << "SELECT prescient.sync_fair_share_indexes()";
  return run;
}

// Priorities (docs/design.md, "Priorities"): n/2 checks at the default priority and 100 at priority 0 put in
// after them, in one slot, drained by 2 workers: where in the drain the last of the 100 settled, as a share of
// the slot's checks (issue 42's figure: within the first 5 %).
Run drain_with_urgent(const std::string& url, soci::session& db, const Registry& registry, long n) {
  const long plain = n / 2, urgent = 100;
  reset(db);
  load(db, plain + urgent, bench_slot(), [&](long i) {
    ScheduleRequest r = request("noop", i, bench_slot());
    if (i >= plain) r.priority = 0;
    return r;
  });
  Run run = drain_loaded(url, registry, plain + urgent, 2);
  long last = 0;
  db << "SELECT max(position) FROM (SELECT priority, row_number() OVER (ORDER BY history_id) AS position"
        " FROM prescient.job_history) h WHERE priority = 0",
      soci::into(last);
  run.extra["last_priority_0_settled_at_percent"] = 100.0 * static_cast<double>(last) / static_cast<double>(plain + urgent);
  return run;
}

std::vector<long> numbers(const std::string& list) {
  std::vector<long> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::stol(item));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string url, url_1s, only = "enqueue,drain", scale_sizes = "1000000,10000000";
  long n = 100000, schedule_count = 100000, dashboard_rows = 10000000;
  int reps = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--db") url = value;
    else if (flag == "--db-1s") url_1s = value;
    else if (flag == "--n") n = std::stol(value);
    else if (flag == "--only") only = value;
    else if (flag == "--prepared-statements") drain_preparation = parse_statement_preparation(value);
    else if (flag == "--scale") scale_sizes = value;
    else if (flag == "--schedules") schedule_count = std::stol(value);
    else if (flag == "--dashboard") dashboard_rows = std::stol(value);
    else if (flag == "--reps") reps = std::stoi(value);
    else {
      std::cerr << "prescient_bench: unknown option " << flag << "\n";
      return 2;
    }
  }
  spdlog::set_level(spdlog::level::warn);  // the daemon's per-slot lines would mix with the figures on stdout
  const auto wanted = [&](const std::string& part) { return ("," + only + ",").find("," + part + ",") != std::string::npos; };
  try {
    Registry registry;
    register_builtin_jobs(registry);
    registry.add("half_again", [] { return std::make_unique<HalfAgain>(); });
    registry.add("one_refused", [] { return std::make_unique<OneInAThousandRefused>(); });
    registry.add("one_throws", [] { return std::make_unique<OneInAThousandThrows>(); });
    add_lateness_classes(registry);
    auto db = connect(url);
    // As a runner does at its start: the classes it runs are known to the database, so enqueue takes them.
    declare_job_classes(*db, registry, "prescient_bench", SystemClock().now());
    if (wanted("enqueue")) {
      const long singles = std::min(n, 5000L);
      for (const int threads : {1, 16}) {
        report_median("enqueue single, " + std::to_string(threads) + " thread(s)", singles, reps,
                      [&] { return enqueue_single(url, *db, singles, threads); });
      }
      for (const long batch : {1000L, 10000L}) {
        report_median("enqueue bulk, " + std::to_string(batch) + " per call", n, reps,
                      [&] { return enqueue_bulk(*db, n, batch); });
      }
      // Weekdays 09:00-17:00 in Berlin: every check counts 4 open hours from the slot.
      *db << "SELECT prescient.calendar_set('bench', 'Europe/Berlin', '{\"hours\": {\"mon\": [\"09:00-17:00\"],"
             " \"tue\": [\"09:00-17:00\"], \"wed\": [\"09:00-17:00\"], \"thu\": [\"09:00-17:00\"],"
             " \"fri\": [\"09:00-17:00\"]}}')";
      report_median("enqueue bulk, 10000 per call, 4h of a calendar", n, reps,
                    [&] { return enqueue_bulk(*db, n, 10000, std::string("bench")); });
    }
    if (wanted("drain")) {
      const auto measure = [&](const char* job, int workers) {
        report_median(std::string("slot drain, ") + job + ", " + std::to_string(workers) + " worker(s)", n, reps,
                      [&] { return drain(url, *db, registry, job, n, workers); });
      };
      for (const int workers : {1, 2, 4}) measure("noop", workers);
      measure("half_again", 2);
      report_median("slot drain, noop, 2 worker(s), 100 at priority 0 after the rest", n / 2 + 100, reps,
                    [&] { return drain_with_urgent(url, *db, registry, n); });
      // Fair share (docs/flow-control.md): the same checks of 10 tenants, plain and fair, in turn (so that a
      // drift of the machine falls on both), each reported as the median of its runs.
      std::vector<Run> plain, fair;
      for (int rep = 0; rep < reps; ++rep) {
        plain.push_back(drain_tenants(url, *db, registry, n, 2, false, 10));
        fair.push_back(drain_tenants(url, *db, registry, n, 2, true, 10));
      }
      report_median_of("slot drain, noop, 2 worker(s), 10 tenants, fair share off", n, std::move(plain));
      report_median_of("slot drain, noop, 2 worker(s), 10 tenants, fair share on", n, std::move(fair));
      measure("emit", 2);
      // The settle is refused for one item of each batch (a constraint another tool added): settled by
      // halves down to the culprit, within the same claim. Compare with emit, 2 workers.
      // (Quiet meanwhile: each refusal is a warning line, and stdout carries the figures.)
      *db << "ALTER TABLE prescient.event ADD CONSTRAINT bench_refused CHECK (type <> 'refused')";
      spdlog::set_level(spdlog::level::off);
      measure("one_refused", 2);
      *db << "ALTER TABLE prescient.event DROP CONSTRAINT bench_refused";
      // A job that throws for one check in 1 000 (each a failed attempt, retried): compare with emit too.
      measure("one_throws", 2);
      spdlog::set_level(spdlog::level::warn);
    }
    if (wanted("scale")) scale(url, *db, registry, numbers(scale_sizes), reps);
    if (wanted("lateness")) lateness(url_1s, registry, 5, 10000);
    if (wanted("schedules")) schedules(url, *db, registry, schedule_count, 5);
    if (wanted("dashboard")) dashboard(url, *db, dashboard_rows);
    if (wanted("http")) http(url, *db, std::min(n, 20000L), reps);
    reset(*db);
  } catch (const std::exception& e) {
    std::cerr << "prescient_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
