#include <soci/soci.h>
#include <spdlog/spdlog.h>

#include "check_options.hpp"
#include "prescient/daemon.hpp"
#include "prescient/errors.hpp"
#include "prescient/queue_stats.hpp"
#include "prescient/retention.hpp"
#include "prometheus_metrics.hpp"
#include "reload.hpp"
#include "runner_options.hpp"
#include "signal_watch.hpp"
#include "serve_web.hpp"

namespace prescient::cli {

namespace {

// The metrics the daemon reports, when something serves them. Made before connecting, so that a bad
// address or a taken port is reported before anything else happens.
std::unique_ptr<PrometheusMetrics> metrics_of(const Invocation& in, const RunnerOptions& options) {
  if (!in.has("metrics-addr") && !in.has("web-addr")) return nullptr;
  return std::make_unique<PrometheusMetrics>(options.database_url, options.runner_id, options.shard.text());
}

// What the daemon serves besides firing: /metrics alone (--metrics-addr), and the dashboard (--web-addr).
struct Served {
  std::unique_ptr<web::WebServer> metrics, dashboard;
};

std::unique_ptr<web::WebServer> serve_dashboard(const Invocation& in, const RunnerOptions& options,
                                                std::function<std::string()> scrape, const Clock& clock) {
  std::string listen_url;
  {
    auto db = in.connect_migrated();
    listen_url = listen_database_url(in, *db);
  }
  if (in.reads_from_replica()) in.connect_for_reading();  // the replica too, before serving
  return serve_web(in, "web-addr", "web-auth-file",
                   {.dashboard = true,
                    .read_only = in.has("web-read-only"),
                    .database_url = options.database_url,
                    .read_database_url = in.reads_from_replica() ? in.read_database_url() : "",
                    .listen_database_url = listen_url,
                    .metrics = std::move(scrape)},
                   clock);
}

Served serve(const Invocation& in, const RunnerOptions& options, PrometheusMetrics* metrics, const Clock& clock) {
  const auto scrape = [metrics] { return metrics->scrape(); };
  Served served;
  if (in.has("metrics-addr")) {
    served.metrics = serve_web(in, "metrics-addr", "", {.dashboard = false, .read_only = true, .metrics = scrape}, clock);
  }
  // A variable or a line for every command (PRESCIENT_READ_DATABASE_URL, read-db before any section)
  // serves the reading commands; only the flag says it is meant for this daemon.
  if (in.origin("read-db").kind == OptionOrigin::Kind::flag && !in.has("web-addr")) {
    in.refuse("read-db", "--read-db is for the dashboard's reads: give it with --web-addr");
  }
  if (in.has("web-addr")) served.dashboard = serve_dashboard(in, options, scrape, clock);
  return served;
}

int run_daemon(const Invocation& in) {
  const RunnerOptions options = runner_options_of(in);
  const Registry& registry = known_job_classes(in);
  const SystemClock clock;
  SystemWaiter waiter(clock);
  // Signals go to one thread that asks the daemon to stop; every other thread, the metrics server's
  // included, starts after this and inherits the mask, so never sees them. (Declared after the waiter
  // it stops, so it is joined before the waiter goes.)
  SignalWatch signals;
  const std::unique_ptr<PrometheusMetrics> metrics = metrics_of(in, options);
  const Served served = serve(in, options, metrics.get(), clock);
  {
    auto db = in.connect_migrated();
    declare_loaded_classes(*db, registry, options);
    // The dashboard's first page finds figures (the refresher's first count is not waited for).
    if (served.dashboard) refresh_queue_figures_before_serving(*db, clock.now());
  }
  // The figures stats, metrics and the dashboard read; one daemon of all counts them at a time.
  const FiguresRefresher figures(options.database_url, clock);
  // The retention prescient.settings sets, applied hourly when this daemon's role may drop (the owner's).
  const RetentionKeeper retention(options.database_url, clock);
  signals.start(
      [&](int received) {
        spdlog::info("runner {}: received {}, finishing the batch in hand", options.runner_id,
                     received == SIGTERM ? "SIGTERM" : "SIGINT");
        waiter.stop();
      },
      [&in] { reload_options(in); });
  Daemon daemon(options, registry, clock, waiter, metrics.get());
  daemon.run();
  return kOk;
}

}  // namespace

Command daemon_command() {
  return {
      .name = "daemon",
      .summary = "Run continuously: sweep missed slots, then fire every slot at its boundary. SIGTERM/SIGINT stop it; SIGHUP reloads.",
      .usage = "daemon [--shard I/N] [--workers N] [--batch N] [--runner-id ID] [--plugins DIR] [--commands DIR]\n"
               "                         [--http-targets FILE] [--batch-deadline DURATION] [--metrics-addr HOST:PORT]\n"
               "                         [--prepared-statements MODE] [--max-clock-offset DURATION]\n"
               "                         [--web-addr HOST:PORT [--web-read-only] [--web-auth-file FILE] [--read-db URL]\n"
               "                          [--listen-db URL]]",
      .add_options =
          [](po::options_description& desc) {
            add_runner_options(desc);
            desc.add_options()("metrics-addr", po::value<std::string>()->value_name("HOST:PORT"),
                               "serve Prometheus metrics at http://HOST:PORT/metrics (e.g. 127.0.0.1:9464; "
                               "default: none)")(
                "web-addr", po::value<std::string>()->value_name("HOST:PORT"),
                "serve the dashboard, its API and /metrics there too, as `prescient web` does (default: none; an "
                "address other than loopback needs --web-auth-file)")(
                "web-read-only", "the dashboard serves no action (as web --read-only)")(
                "web-auth-file", po::value<std::string>()->value_name("FILE"),
                "the dashboard's credentials (as web --auth-file)");
            add_listen_db_option(desc);
            add_read_db_option(desc);
          },
      .run = run_daemon,
  };
}

}  // namespace prescient::cli
