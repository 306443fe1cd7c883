// A slot runner and a daemon on PostgreSQL: the opener of their stores and of their jobs' sessions, and
// the constructors that use it. In db/, not runner/: the runner knows only the StoreOpener interface
// (runner/upkeep_store.hpp), so that nothing in runner/ links to a database (scripts/check-layers.sh).
#include <soci/soci.h>

#include "db/pg_runner_store.hpp"
#include "prescient/daemon.hpp"
#include "prescient/database.hpp"
#include "prescient/slot_runner.hpp"

namespace prescient {
namespace {

// A new session to the database each: one per runner thread, one for the upkeep, one for each runner thread's jobs.
class PostgresStoreOpener final : public runner::StoreOpener {
 public:
  PostgresStoreOpener(std::string url, StatementPreparation preparation)
      : url_(std::move(url)), preparation_(preparation) {}
  std::unique_ptr<runner::RunnerStore> open_thread_store() override { return open(); }
  std::unique_ptr<runner::UpkeepStore> open_upkeep_store() override { return open(); }
  std::unique_ptr<soci::session> open_job_session() override { return connect(url_); }

 private:
  std::unique_ptr<db::PgRunnerStore> open() { return std::make_unique<db::PgRunnerStore>(connect(url_), preparation_); }

  const std::string url_;
  const StatementPreparation preparation_;
};

std::shared_ptr<runner::StoreOpener> postgres_store_opener(const RunnerOptions& options) {
  return std::make_shared<PostgresStoreOpener>(options.database_url, options.statement_preparation);
}

}  // namespace

SlotRunner::SlotRunner(RunnerOptions options, const Registry& registry, const Clock& clock)
    : SlotRunner(options, registry, clock, postgres_store_opener(options)) {}

Daemon::Daemon(RunnerOptions options, const Registry& registry, const Clock& clock, Waiter& waiter,
               DaemonObserver* observer)
    : Daemon(options, registry, clock, waiter, observer, postgres_store_opener(options)) {}

}  // namespace prescient
