#include <soci/soci.h>
#include <spdlog/spdlog.h>

#include "ops/turns.hpp"
#include "prescient/retention.hpp"

namespace prescient {
namespace {

constexpr int kBatch = 10000;

}  // namespace

RetentionKeeper::RetentionKeeper(std::string database_url, const Clock& clock, std::chrono::milliseconds every)
    : clock_(clock),
      turns_(std::make_unique<ops::Turns>(std::move(database_url), every, "retention: cannot apply it",
                                          [this](soci::session& db) { turn(db); })) {}

RetentionKeeper::~RetentionKeeper() = default;

void RetentionKeeper::turn(soci::session& db) {
  if (!may_drop_history(db)) {
    if (!said_may_not_) {
      spdlog::info("retention: this daemon's role may not drop history partitions (the schema owner's right), so"
                   " it applies no retention; the owner's `prescient purge --retention` does");
      said_may_not_ = true;
    }
    return;
  }
  said_may_not_ = false;
  const RetentionRun run = apply_retention(db, clock_.now(), kBatch);
  if (run.history.rows + run.history.runs + run.history.deferrals + run.history.flow_figures + run.dead_letters +
          run.events + run.idle_flow_rows ==
      0) {
    return;
  }
  spdlog::info("retention: removed {} history rows ({} whole months dropped), {} runs, {} deferrals ({} counts), {} "
               "dead letters, {} events and {} idle flow control rows",
               run.history.rows, run.history.months_dropped, run.history.runs, run.history.deferrals,
               run.history.flow_figures, run.dead_letters, run.events, run.idle_flow_rows);
}

}  // namespace prescient
