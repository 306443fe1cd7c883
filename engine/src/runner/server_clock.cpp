#include "prescient/server_clock.hpp"

#include <spdlog/spdlog.h>

#include <cstdlib>

#include "prescient/duration.hpp"
#include "prescient/errors.hpp"

namespace prescient {
namespace {

constexpr std::chrono::minutes kWarnEvery{10};

// "3m0.2s ahead of" / "1.5s behind": the local clock against the server's (offset = server - local).
std::string distance(Micros offset) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(offset).count();
  const double seconds = static_cast<double>(std::llabs(ms)) / 1000.0;
  return fmt::format("{:.3f}s {} the database server's", seconds, ms < 0 ? "ahead of" : "behind");
}

}  // namespace

void ServerClock::adopt(Micros measured, const ClockCheck& check, bool starting) {
  const Micros size = measured < Micros{0} ? -measured : measured;
  if (starting && size > check.refuse_over) {
    throw InvalidInput("this host's clock is " + distance(measured) + " clock, more than --max-clock-offset " +
                       format_duration(check.refuse_over) +
                       ": set its time right (NTP), or raise --max-clock-offset to run on the server's clock anyway");
  }
  offset_us_.store(measured.count());
  const TimePoint local = local_.now();
  if (size <= check.warn_over) {
    if (warned_at_) spdlog::info("this host's clock is back within {}ms of the database server's", check.warn_over.count());
    warned_at_.reset();
    return;
  }
  if (warned_at_ && local - *warned_at_ < kWarnEvery && local >= *warned_at_) return;
  warned_at_ = local;
  spdlog::warn("this host's clock is {} clock: slots are fired on the server's (set this host's time right: NTP)",
               distance(measured));
}

}  // namespace prescient
