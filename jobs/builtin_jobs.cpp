#include "builtin_jobs.hpp"

#include "command_job.hpp"
#include "cron_job.hpp"
#include "emit.hpp"
#include "http_job.hpp"
#include "noop.hpp"
#include "prescient/registry.hpp"
#include "sql_job.hpp"

namespace prescient::jobs {

void register_builtin_jobs(Registry& registry, const BuiltinOptions& options) {
  registry.add("noop", [] { return std::make_unique<NoopJob>(); });
  registry.add("emit", [] { return std::make_unique<EmitJob>(); });
  registry.add("sql", [] { return std::make_unique<SqlJob>(); });
  registry.add("cron", [] { return std::make_unique<CronJob>(); });
  registry.add("command", [dir = options.commands_dir] { return std::make_unique<CommandJob>(dir); });
  registry.add("http", [targets = options.http_targets] { return std::make_unique<HttpJob>(targets); });
}

}  // namespace prescient::jobs
