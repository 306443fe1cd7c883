#include "runner_options.hpp"

#include "check_options.hpp"
#include "policy_options.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include "prescient/database.hpp"
#include "prescient/duration.hpp"
#include "prescient/errors.hpp"
#include "prescient/job_classes.hpp"
#include "prescient/shard.hpp"

namespace prescient::cli {

std::string default_runner_id() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return std::string(*host ? host : "runner") + ":" + std::to_string(::getpid());
}

void add_runner_options(po::options_description& desc) {
  desc.add_options()
      ("shard", po::value<std::string>()->value_name("I/N")->default_value("0/1"),
       "own only the slots whose index mod N is I")
      ("workers", po::value<int>()->value_name("N")->default_value(2),
       "runner threads, each with its own database session")
      ("batch", po::value<int>()->value_name("N")->default_value(1000), "checks claimed per transaction")
      ("batch-deadline", po::value<std::string>()->value_name("DURATION")->default_value("10s"),
       "start no job of a batch after this long from its claim: the checks not reached are released unrun, "
       "so a cancel or reschedule waits for a claimed check at most this plus the running job's timeout")
      ("runner-id", po::value<std::string>()->value_name("ID"),
       "recorded as finished_by in the history (default: hostname:pid)")
      ("prepared-statements", po::value<std::string>()->value_name("MODE"),
       "auto, on or off: prepare the claim and settle statements on the server (auto: yes on a direct "
       "connection, no through a connection pooler; off for PgBouncer in transaction mode; default: "
       "$PRESCIENT_PREPARED_STATEMENTS, else auto)")
      ("max-clock-offset", po::value<std::string>()->value_name("DURATION")->default_value("5m"),
       "refuse to start when this host's clock is further than this from the database server's (1s to 7d). "
       "Slots are always fired on the server's clock, measured at start and before every slot a daemon "
       "fires; beyond 1s a warning is logged");
  add_default_policy_options(desc);
  add_plugins_option(desc);
  desc.add_options()("commands", po::value<std::string>()->value_name("DIR"),
                     "the command class may run executables from DIR only (default: none, it refuses)")
      ("http-targets", po::value<std::string>()->value_name("FILE"),
       "the http class's targets (docs/http.md; default: $PRESCIENT_HTTP_TARGETS, else none: it refuses)");
}

RunnerOptions runner_options_of(const Invocation& in) {
  RunnerOptions options;
  options.database_url = in.database_url();
  options.runner_id = in.has("runner-id") ? in.get<std::string>("runner-id") : default_runner_id();
  if (options.runner_id.empty()) in.refuse("runner-id", "--runner-id is empty");
  options.workers = in.get<int>("workers");
  if (options.workers < 1 || options.workers > kMaxWorkers) {
    in.refuse("workers", "invalid --workers " + std::to_string(options.workers) + ": use 1 to " +
                             std::to_string(kMaxWorkers));
  }
  options.batch_size = in.get<int>("batch");
  if (options.batch_size < 1 || options.batch_size > 100000) {
    in.refuse("batch", "invalid --batch " + std::to_string(options.batch_size) + ": use 1 to 100000");
  }
  options.shard = in.parsed("shard", parse_shard);
  if (in.has("prepared-statements")) {
    options.statement_preparation = in.parsed("prepared-statements", parse_statement_preparation);
  }
  const std::chrono::seconds deadline = in.parsed("batch-deadline", parse_duration);
  if (deadline < std::chrono::seconds{1} || deadline > std::chrono::hours{24}) {
    in.refuse("batch-deadline", "invalid --batch-deadline " + in.get<std::string>("batch-deadline") + ": use 1s to 1d");
  }
  options.batch_deadline = deadline;
  const std::chrono::seconds max_offset = in.parsed("max-clock-offset", parse_duration);
  if (max_offset < std::chrono::seconds{1} || max_offset > std::chrono::days{7}) {
    in.refuse("max-clock-offset",
              "invalid --max-clock-offset " + in.get<std::string>("max-clock-offset") + ": use 1s to 7d");
  }
  options.clock_check = {.enabled = true, .refuse_over = max_offset};
  options.default_policy = default_policy_of(in);
  return options;
}

void declare_loaded_classes(soci::session& db, const Registry& registry, const RunnerOptions& options) {
  const int added = declare_job_classes(db, registry, options.runner_id, SystemClock().now());
  spdlog::debug("runner {}: declared {} job classes ({} new to the database)", options.runner_id,
               registry.names().size(), added);
}

void ensure_history_partitions(SlotRunner& runner) {
  try {
    runner.ensure_history_partitions();
  } catch (const std::exception& e) {
    spdlog::warn("could not create history partitions (firing anyway): {}", e.what());
  }
}

void put_on_server_clock(SlotRunner& runner, ServerClock& clock, const RunnerOptions& options) {
  clock.adopt(runner.server_clock_offset(clock.local()), options.clock_check, true);
}

}  // namespace prescient::cli
