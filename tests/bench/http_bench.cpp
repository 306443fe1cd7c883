// The http class's throughput: checks of one slot answered by a local receiver that answers 204 at once
// (cpp-httplib, 16 threads, in this process), with 1 and 2 workers: claim, written lease, the batch's
// requests at once (16 in flight per target), settlement. The slow path without the requests also with 4
// workers, as the drain is measured.
#include <httplib.h>

#include <thread>

#include "bench_support.hpp"
#include "builtin_jobs.hpp"
#include "prescient/clock.hpp"
#include "prescient/job_classes.hpp"
#include "prescient/registry.hpp"
#include "prescient/slot_runner.hpp"

namespace prescient::bench {

using namespace prescient::jobs;
namespace {

// The slow path with nothing to wait on: claim, written lease, settlement fenced by the lease. What the http
// class's checks cost without HTTP, the floor under its figure.
class LeasedNoop final : public JobExec {
 public:
  JobPolicy policy() const override { return {.long_running = true, .batch = true}; }
  JobResult run(const Check&, JobContext&) override { return {}; }
};

}  // namespace

void http(const std::string& url, soci::session& db, long n, int reps) {
  httplib::Server receiver;
  receiver.new_task_queue = [] { return new httplib::ThreadPool(16); };
  receiver.set_tcp_nodelay(true);
  // cpp-httplib closes a connection after 5 requests by default, and then its pool of threads stalls on
  // reconnections (1 000/s instead of 20 000/s): a receiver that keeps connections, as a real one does.
  receiver.set_keep_alive_max_count(1000000);
  receiver.Post("/hooks/check", [](const httplib::Request&, httplib::Response& response) { response.status = 204; });
  const int port = receiver.bind_to_any_port("127.0.0.1");
  std::thread serving([&] { receiver.listen_after_bind(); });

  const int in_flight = 16;
  auto targets = std::make_shared<HttpTargets>();
  (*targets)["bench"] = {.name = "bench", .base_url = "http://127.0.0.1:" + std::to_string(port) + "/hooks",
                         .secret = "bench-secret", .timeout = std::chrono::seconds{10}, .max_concurrent = in_flight,
                         .ca_file = std::nullopt};
  Registry registry;
  register_builtin_jobs(registry, {.commands_dir = std::nullopt, .http_targets = targets});
  registry.add("leased_noop", [] { return std::make_unique<LeasedNoop>(); });
  declare_job_classes(db, registry, "prescient_bench", SystemClock().now());  // as a runner does at its start
  for (const auto& [job, workers] : std::vector<std::pair<const char*, int>>{{"leased_noop", 1}, {"leased_noop", 2},
                                                                            {"leased_noop", 4}, {"http", 1}, {"http", 2}}) {
    const std::string measure = std::string(job) == "http" ? "http checks (receiver answers 204), " +
                                                                 std::to_string(in_flight) + " in flight, "
                                                           : "slow path without a request (leased noop), ";
    report_median(measure + std::to_string(workers) + " worker(s)", n, reps, [&] {
                    reset(db);
                    load(db, job, n, bench_slot());
                    db << "UPDATE prescient.future_job SET payload = '{\"target\": \"bench\", \"path\": \"/check\"}'";
                    db << "VACUUM ANALYZE prescient.future_job";
                    ManualClock at_slot(bench_slot());
                    SlotRunner runner({.database_url = url, .runner_id = "bench", .workers = workers}, registry, at_slot);
                    const double cpu_before = machine_cpu_seconds();
                    const SlotReport r = runner.run_slot(bench_slot());
                    const double cpu = machine_cpu_seconds() - cpu_before;
                    if (r.claimed != n || r.done != n) {
                      throw std::runtime_error(std::string(job) + ": " + std::to_string(r.done) + " of " + std::to_string(n) + " done");
                    }
                    return Run{.seconds = r.seconds, .extra = {{"machine_cpu_us_per_check", cpu * 1e6 / n}}};
                  });
  }
  receiver.stop();
  serving.join();
}

}  // namespace prescient::bench
