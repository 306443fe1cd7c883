#pragma once
// The daemon's metrics in Prometheus' text format (prometheus-cpp's registry and serializer), served at
// /metrics by the daemon's web server (--metrics-addr, --web-addr). Counters and histograms are fed by the
// daemon as it fires; the pending checks by horizon are read from the figures the daemons count in the
// background, and the database's health from the primary's statistics (health_metrics.hpp).
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <memory>
#include <string>

#include "prescient/daemon.hpp"

namespace prescient::cli {

class PendingCollector;
class HealthCollector;

class PrometheusMetrics final : public DaemonObserver {
 public:
  PrometheusMetrics(const std::string& database_url, const std::string& runner_id, const std::string& shard);
  ~PrometheusMetrics() override;

  // Every metric, in Prometheus' text format. Safe from any thread.
  std::string scrape() const;

  void fired(const SlotReport& report, bool on_boundary) override;
  void failed(const std::exception& error) override;
  void slot_retried(TimePoint slot) override;
  void clock_offset(Micros server_minus_local) override;

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  std::shared_ptr<PendingCollector> pending_;
  std::shared_ptr<HealthCollector> health_;
  prometheus::Counter& claimed_;
  prometheus::Family<prometheus::Counter>& settled_;
  prometheus::Counter& events_;
  prometheus::Counter& deferred_;
  prometheus::Counter& dead_letters_;
  prometheus::Counter& database_errors_;
  prometheus::Counter& slot_retries_;
  prometheus::Histogram& first_claim_lag_;
  prometheus::Histogram& last_commit_lag_;
  prometheus::Histogram& batch_duration_;
  prometheus::Gauge& last_slot_;
  prometheus::Gauge& clock_offset_;
};

}  // namespace prescient::cli
