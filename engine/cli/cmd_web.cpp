#include <soci/soci.h>
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <iostream>
#include <mutex>

#include "check_options.hpp"
#include "command.hpp"
#include "prescient/database.hpp"
#include "prescient/queue_stats.hpp"
#include "signal_watch.hpp"
#include "web/web_auth.hpp"
#include "reload.hpp"
#include "serve_web.hpp"

namespace prescient::cli {

Command web_command() {
  return {
      .name = "web",
      .summary = "Serve the dashboard and its JSON API (docs/web.md). SIGTERM/SIGINT stop it; SIGHUP reloads.",
      .usage = "web [--addr HOST:PORT] [--read-only] [--auth-file FILE] [--read-db URL] [--listen-db URL]\n"
               "                     web --hash-secret NAME < secret",
      .add_options =
          [](po::options_description& desc) {
            add_read_db_option(desc);
            add_listen_db_option(desc);
            desc.add_options()("addr", po::value<std::string>()->default_value("127.0.0.1:8080")->value_name("HOST:PORT"),
                               "where to listen; an address other than loopback needs --auth-file")(
                "read-only", "serve no action (cancel, reschedule, retry, pause): for viewers, with a read-only "
                             "database role (docs/web.md)")(
                "auth-file", po::value<std::string>()->value_name("FILE"),
                "credentials, one NAME:SALT:SHA256 a line; every request must then authenticate (HTTP Basic)")(
                "hash-secret", po::value<std::string>()->value_name("NAME"),
                "print an --auth-file line for NAME from the secret read on stdin, and exit");
          },
      .run =
          [](const Invocation& in) {
            if (in.has("hash-secret")) {
              std::string secret;
              std::getline(std::cin, secret);
              std::cout << web::credential_line(in.get<std::string>("hash-secret"), secret) << "\n";
              return kOk;
            }
            const SystemClock clock;
            SignalWatch signals;  // before any thread, so that only its own takes the signals
            const std::string url = in.database_url();
            std::string listen_url;
            {
              auto db = in.connect_migrated();  // a database it cannot serve is reported before it listens
              listen_url = listen_database_url(in, *db);
              refresh_queue_figures_before_serving(*db, clock.now());  // figures before the first page
            }
            if (in.reads_from_replica()) in.connect_for_reading();  // the replica too, before it listens
            const FiguresRefresher figures(url, clock);
            const auto server = serve_web(in, "addr", "auth-file",
                                          {.read_only = in.has("read-only"),
                                           .database_url = url,
                                           .read_database_url = in.reads_from_replica() ? in.read_database_url() : "",
                                           .listen_database_url = listen_url,
                                           .metrics = {}},
                                          clock);
            std::cout << "dashboard: " << server->url() << std::endl;
            std::mutex mutex;
            std::condition_variable stop;
            bool stopping = false;
            signals.start(
                [&](int) {
                  {
                    const std::lock_guard lock(mutex);
                    stopping = true;
                  }
                  stop.notify_all();
                },
                [&in] { reload_options(in); });
            std::unique_lock lock(mutex);
            stop.wait(lock, [&] { return stopping; });
            spdlog::info("web: stopping");
            return kOk;
          },
  };
}

}  // namespace prescient::cli
