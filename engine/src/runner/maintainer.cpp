#include <spdlog/spdlog.h>

#include "prescient/errors.hpp"
#include "runner/maintenance.hpp"

namespace prescient::runner {

Maintainer::Maintainer(std::string runner_id, std::vector<std::unique_ptr<MaintenanceService>> services,
                       std::function<void(const std::exception&)> on_error)
    : runner_id_(std::move(runner_id)), services_(std::move(services)), on_error_(std::move(on_error)) {}

void Maintainer::run_due(SlotRunner& runner, const std::optional<FiredSlot>& fired, TimePoint now) {
  for (const auto& service : services_) {
    if (!service->due(fired, now)) continue;
    try {
      service->run_once(runner, fired, now);
    } catch (const InvalidInput&) {
      throw;
    } catch (const std::exception& e) {
      if (service->failure_is_error() && on_error_) on_error_(e);
      spdlog::warn("runner {}: {}: {}", runner_id_, service->failed(fired, now), e.what());
    }
  }
}

}  // namespace prescient::runner
