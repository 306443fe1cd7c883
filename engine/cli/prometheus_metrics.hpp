#pragma once
// `prescient daemon --metrics-addr HOST:PORT`: the daemon's metrics in Prometheus' text format at
// http://HOST:PORT/metrics (prometheus-cpp). Counters and histograms are fed by the daemon as it fires;
// the pending checks by horizon are read from the figures the daemons count in the background.
#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <memory>
#include <string>

#include "prescient/daemon.hpp"

namespace prescient::cli {

class PendingCollector;

class PrometheusMetrics final : public DaemonObserver {
 public:
  // Listens on `address` ("127.0.0.1:9464"; IPv4 or a host name) at once. Throws InvalidInput for an address
  // that is not HOST:PORT, std::runtime_error when it cannot listen there (the port is taken, say).
  PrometheusMetrics(const std::string& address, const std::string& database_url, const std::string& runner_id,
                    const std::string& shard);
  ~PrometheusMetrics() override;

  void fired(const SlotReport& report, bool on_boundary) override;
  void failed(const std::exception& error) override;
  void slot_retried(TimePoint slot) override;

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  std::shared_ptr<PendingCollector> pending_;
  prometheus::Counter& claimed_;
  prometheus::Family<prometheus::Counter>& settled_;
  prometheus::Counter& events_;
  prometheus::Counter& dead_letters_;
  prometheus::Counter& database_errors_;
  prometheus::Counter& slot_retries_;
  prometheus::Histogram& first_claim_lag_;
  prometheus::Histogram& last_commit_lag_;
  prometheus::Histogram& batch_duration_;
  prometheus::Gauge& last_slot_;
  std::unique_ptr<prometheus::Exposer> exposer_;  // last: serves only once everything above exists
};

}  // namespace prescient::cli
