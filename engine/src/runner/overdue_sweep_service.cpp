#include <spdlog/spdlog.h>

#include "prescient/time_text.hpp"
#include "runner/maintenance.hpp"

namespace prescient::runner {
namespace {

class OverdueSweepService final : public MaintenanceService {
 public:
  OverdueSweepService(std::string runner_id, std::function<void(const SlotReport&)> swept)
      : runner_id_(std::move(runner_id)), swept_(std::move(swept)) {}
  bool due(const std::optional<FiredSlot>& fired, TimePoint) const override { return fired.has_value(); }
  void run_once(SlotRunner& runner, const std::optional<FiredSlot>& fired, TimePoint) override {
    const SlotReport overdue = runner.sweep(fired->slot, SweepMode::run);
    if (overdue.claimed > 0) {
      spdlog::info("runner {}: caught up {} overdue checks before {}", runner_id_, overdue.claimed,
                   format_time(fired->slot));
    }
    if (swept_) swept_(overdue);
  }
  std::string failed(const std::optional<FiredSlot>& fired, TimePoint) override {
    return "catching up before slot " + format_time(fired->slot) + " failed, trying again after the next slot";
  }
  bool failure_is_error() const override { return true; }

 private:
  std::string runner_id_;
  std::function<void(const SlotReport&)> swept_;
};

}  // namespace

std::unique_ptr<MaintenanceService> overdue_sweep_service(std::string runner_id,
                                                          std::function<void(const SlotReport&)> swept) {
  return std::make_unique<OverdueSweepService>(std::move(runner_id), std::move(swept));
}

}  // namespace prescient::runner
