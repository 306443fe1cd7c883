#pragma once
// The database's health (prescient/database_health.hpp) as Prometheus metrics, for the daemon's /metrics:
// the horizon's age and who holds it, dead tuples and the last autovacuum per table, the age of the oldest
// overdue check. Read on a session of its own, on the daemon's database (the primary), at most every
// kHealthReadEvery, whatever the scrape interval.
#include <prometheus/collectable.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "prescient/time.hpp"

namespace soci {
class session;
}

namespace prescient::cli {

inline constexpr std::chrono::seconds kHealthReadEvery{10};

class HealthCollector final : public prometheus::Collectable {
 public:
  explicit HealthCollector(std::string database_url);
  ~HealthCollector() override;
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const std::string database_url_;
  mutable std::mutex mutex_;
  mutable std::unique_ptr<soci::session> db_;
  mutable std::optional<TimePoint> read_at_;
  mutable std::vector<prometheus::MetricFamily> families_;
};

}  // namespace prescient::cli
