#include "prescient/duration.hpp"
#include "prescient/errors.hpp"
#include "runner/maintenance.hpp"

namespace prescient::runner {
namespace {

class HistoryPartitionsService final : public MaintenanceService {
 public:
  explicit HistoryPartitionsService(HistoryPartitionsConfig config) : config_(config) {
    if (config_.every.count() <= 0 || config_.retry.count() <= 0) {
      throw InvalidInput("history partitions: the interval (" + format_duration(config_.every) + ") and the retry (" +
                         format_duration(config_.retry) + ") must be positive");
    }
  }
  bool due(const std::optional<FiredSlot>&, TimePoint now) const override { return now >= due_; }
  void run_once(SlotRunner& runner, const std::optional<FiredSlot>&, TimePoint now) override {
    runner.ensure_history_partitions();
    due_ = now + config_.every;
  }
  std::string failed(const std::optional<FiredSlot>&, TimePoint now) override {
    due_ = now + config_.retry;
    return "could not create history partitions, trying again in " + format_duration(config_.retry);
  }
  bool failure_is_error() const override { return false; }

 private:
  HistoryPartitionsConfig config_;
  TimePoint due_{};  // when to look again; at first, at once
};

}  // namespace

std::unique_ptr<MaintenanceService> history_partitions_service(HistoryPartitionsConfig config) {
  return std::make_unique<HistoryPartitionsService>(config);
}

}  // namespace prescient::runner
