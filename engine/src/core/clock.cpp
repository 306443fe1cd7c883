#include "prescient/clock.hpp"

namespace prescient {

TimePoint SystemClock::now() const {
  return std::chrono::time_point_cast<Micros>(std::chrono::system_clock::now());
}

}  // namespace prescient
