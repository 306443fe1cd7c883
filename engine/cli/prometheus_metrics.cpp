#include "prometheus_metrics.hpp"

#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>
#include <soci/soci.h>
#include <spdlog/spdlog.h>

#include <mutex>

#include "prescient/clock.hpp"
#include "prescient/database.hpp"
#include "prescient/errors.hpp"
#include "prescient/queue_stats.hpp"
#include "health_metrics.hpp"

namespace prescient::cli {
namespace {

// A scrape every few seconds reads the figures at most this often.
constexpr std::chrono::seconds kFiguresReadEvery{15};

const prometheus::Histogram::BucketBoundaries kLagBuckets{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                                          1,     2.5,  5,     10,   30,  60};
const prometheus::Histogram::BucketBoundaries kBatchBuckets{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                            0.25,  0.5,    1,     2.5,  5,     10,   30};

double seconds_between(TimePoint from, TimePoint to) { return std::chrono::duration<double>(to - from).count(); }

}  // namespace

// prescient_pending_checks{horizon=...}: overdue (before the current slot), due (the current slot), and
// those due within the next hour, day and week after it; prescient_queue_figures_age_seconds: how old
// they are. Read from the figures the daemons count in the background (queue_stats.hpp), on a session of
// its own, at most every kFiguresReadEvery: a scrape never counts the pending table.
class PendingCollector final : public prometheus::Collectable {
 public:
  explicit PendingCollector(std::string database_url) : database_url_(std::move(database_url)) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    const std::lock_guard lock(mutex_);
    const TimePoint now = SystemClock().now();
    if (!read_at_ || now - *read_at_ >= kFiguresReadEvery) {
      try {
        read(now);
      } catch (const std::exception& e) {
        db_.reset();  // reconnect at the next scrape
        spdlog::warn("metrics: cannot read the queue figures: {}", e.what());
        return {};
      }
    }
    if (!figures_) return {};
    prometheus::MetricFamily age{.name = "prescient_queue_figures_age_seconds",
                                 .help = "How old the figures of prescient_pending_checks are (counted in the "
                                         "background at most once a minute, by one daemon of all)",
                                 .type = prometheus::MetricType::Gauge,
                                 .metric = {prometheus::ClientMetric{}}};
    age.metric[0].gauge.value = seconds_between(figures_->counted_at, now);
    return {family_, age};
  }

 private:
  void read(TimePoint now) const {
    if (!db_) db_ = connect(database_url_);
    figures_ = pending_by_horizon(*db_);
    if (!figures_) return;  // not counted yet: look again at the next scrape
    read_at_ = now;
    const PendingByHorizon& pending = *figures_;
    family_ = {.name = "prescient_pending_checks",
               .help = "Pending checks by when they are due: before the current slot (overdue), at it (due), "
                       "and within the hour, day and week after it",
               .type = prometheus::MetricType::Gauge,
               .metric = {}};
    for (const auto& [horizon, value] :
         {std::pair{"overdue", pending.overdue}, {"due", pending.due}, {"next_hour", pending.next_hour},
          {"next_day", pending.next_day}, {"next_week", pending.next_week}}) {
      prometheus::ClientMetric metric;
      metric.label = {{"horizon", horizon}};
      metric.gauge.value = static_cast<double>(value);
      family_.metric.push_back(metric);
    }
  }

  const std::string database_url_;
  mutable std::mutex mutex_;
  mutable std::unique_ptr<soci::session> db_;
  mutable std::optional<TimePoint> read_at_;
  mutable std::optional<PendingByHorizon> figures_;
  mutable prometheus::MetricFamily family_;
};

namespace {

std::shared_ptr<prometheus::Registry> with_runner_info(const std::string& runner_id, const std::string& shard) {
  auto registry = std::make_shared<prometheus::Registry>();
  prometheus::BuildGauge()
      .Name("prescient_runner_info")
      .Help("This runner: its id (finished_by in the history) and shard")
      .Register(*registry)
      .Add({{"runner_id", runner_id}, {"shard", shard}})
      .Set(1);
  return registry;
}

}  // namespace

PrometheusMetrics::PrometheusMetrics(const std::string& database_url, const std::string& runner_id,
                                     const std::string& shard)
    : registry_(with_runner_info(runner_id, shard)),
      pending_(std::make_shared<PendingCollector>(database_url)),
      health_(std::make_shared<HealthCollector>(database_url)),
      claimed_(prometheus::BuildCounter()
                   .Name("prescient_checks_claimed_total")
                   .Help("Checks claimed by this runner (a check claimed again after a failed run counts again)")
                   .Register(*registry_)
                   .Add({})),
      settled_(prometheus::BuildCounter()
                   .Name("prescient_checks_settled_total")
                   .Help("Checks settled by this runner, by outcome: done, rescheduled, retried, failed, guarded")
                   .Register(*registry_)),
      events_(prometheus::BuildCounter()
                  .Name("prescient_events_emitted_total")
                  .Help("Events written to the outbox by this runner's settlements")
                  .Register(*registry_)
                  .Add({})),
      deferred_(prometheus::BuildCounter()
                    .Name("prescient_checks_deferred_total")
                    .Help("Checks this runner's flow limits moved to a later time (a check waiting for a "
                          "concurrency place counts at each look; per limit and key value: prescient limits)")
                    .Register(*registry_)
                    .Add({})),
      dead_letters_(prometheus::BuildCounter()
                        .Name("prescient_dead_letters_total")
                        .Help("Checks this runner finished as failed, out of retries (prescient retry --id puts one back)")
                        .Register(*registry_)
                        .Add({})),
      database_errors_(prometheus::BuildCounter()
                           .Name("prescient_database_errors_total")
                           .Help("Database failures the daemon backed off from and retried")
                           .Register(*registry_)
                           .Add({})),
      slot_retries_(prometheus::BuildCounter()
                        .Name("prescient_slot_retries_total")
                        .Help("Failed tries of a slot at its boundary (tried again until the next boundary, then "
                              "left to the sweep)")
                        .Register(*registry_)
                        .Add({})),
      first_claim_lag_(prometheus::BuildHistogram()
                           .Name("prescient_slot_first_claim_lag_seconds")
                           .Help("From a slot's boundary to its first claimed batch")
                           .Register(*registry_)
                           .Add({}, kLagBuckets)),
      last_commit_lag_(prometheus::BuildHistogram()
                           .Name("prescient_slot_last_settle_lag_seconds")
                           .Help("From a slot's boundary to the commit of its last settlement")
                           .Register(*registry_)
                           .Add({}, kLagBuckets)),
      batch_duration_(prometheus::BuildHistogram()
                          .Name("prescient_batch_duration_seconds")
                          .Help("One batch, from its claim to its commit")
                          .Register(*registry_)
                          .Add({}, kBatchBuckets)),
      last_slot_(prometheus::BuildGauge()
                     .Name("prescient_last_slot_timestamp_seconds")
                     .Help("The last slot fired at its boundary, as Unix time")
                     .Register(*registry_)
                     .Add({})),
      clock_offset_(prometheus::BuildGauge()
                        .Name("prescient_clock_offset_seconds")
                        .Help("How far the database server's clock is ahead of this host's (negative: behind), "
                              "as last measured; slots are fired on the server's")
                        .Register(*registry_)
                        .Add({})) {
  for (const char* outcome : {"done", "rescheduled", "retried", "failed", "guarded"}) settled_.Add({{"outcome", outcome}});
}

PrometheusMetrics::~PrometheusMetrics() = default;

std::string PrometheusMetrics::scrape() const {
  std::vector<prometheus::MetricFamily> families = registry_->Collect();
  for (auto& family : pending_->Collect()) families.push_back(std::move(family));
  for (auto& family : health_->Collect()) families.push_back(std::move(family));
  return prometheus::TextSerializer().Serialize(families);
}

void PrometheusMetrics::fired(const SlotReport& report, bool on_boundary) {
  claimed_.Increment(static_cast<double>(report.claimed));
  settled_.Add({{"outcome", "done"}}).Increment(static_cast<double>(report.done));
  settled_.Add({{"outcome", "rescheduled"}}).Increment(static_cast<double>(report.rescheduled));
  settled_.Add({{"outcome", "retried"}}).Increment(static_cast<double>(report.retried));
  settled_.Add({{"outcome", "failed"}}).Increment(static_cast<double>(report.failed));
  settled_.Add({{"outcome", "guarded"}}).Increment(static_cast<double>(report.guarded));
  events_.Increment(static_cast<double>(report.events));
  deferred_.Increment(static_cast<double>(report.deferred));
  dead_letters_.Increment(static_cast<double>(report.failed));
  for (const double seconds : report.batch_seconds) batch_duration_.Observe(seconds);
  if (!on_boundary) return;
  last_slot_.Set(static_cast<double>(to_unix_micros(report.slot)) / 1e6);
  if (report.first_claim_at) first_claim_lag_.Observe(seconds_between(report.slot, *report.first_claim_at));
  if (report.last_commit_at) last_commit_lag_.Observe(seconds_between(report.slot, *report.last_commit_at));
}

void PrometheusMetrics::failed(const std::exception&) { database_errors_.Increment(); }

void PrometheusMetrics::slot_retried(TimePoint) { slot_retries_.Increment(); }

void PrometheusMetrics::clock_offset(Micros server_minus_local) {
  clock_offset_.Set(static_cast<double>(server_minus_local.count()) / 1e6);
}

}  // namespace prescient::cli
