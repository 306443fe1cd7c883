#pragma once
// Internal: how far the runner threads of one runner have claimed the slot they drain, in claim order (that of the
// index future_job_due: due time, priority, id). Each claim starts after the mark: the rows before it are
// settled (their entries in the index are dead, and a claim from the slot's start would walk them) or held
// by a sibling runner thread (locked rows that a claim from the start tests one by one and skips), which cost a
// drain about 1 µs a check with two runner threads and more with four (docs/performance.md, "The claim starts
// where the last one ended"). A row before the mark may still be claimable: given back unrun (a batch
// deadline, a failed batch) or put into the slot while it drains. So a claim after the mark that finds
// nothing looks once more from the slot's start: such a row runs in the same slot, after the rest.
// Fair share's claim takes each value of its field in turn, in that value's order (priority, id): it keeps
// a place for each value, and starts each value's part after it.
#include <compare>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "prescient/time.hpp"

namespace prescient::runner {

// A row's place in claim order.
struct ClaimKey {
  TimePoint due;
  int priority = 0;
  std::int64_t id = 0;
  auto operator<=>(const ClaimKey&) const = default;
};

// Keeps in `places` the further of `value`'s place there and `key`.
inline void keep_furthest(std::map<std::string, ClaimKey>& places, const std::string& value, const ClaimKey& key) {
  auto [it, added] = places.try_emplace(value, key);
  if (!added && it->second < key) it->second = key;
}

// Shared by the runner threads draining one slot; thread-safe.
class ClaimMark {
 public:
  std::optional<ClaimKey> get() const {
    const std::lock_guard lock(mutex_);
    return key_;
  }
  // Moves the mark to `key` if it is further on.
  void advance(const ClaimKey& key) {
    const std::lock_guard lock(mutex_);
    if (!key_ || *key_ < key) key_ = key;
  }

  // Fair share's places, by value.
  std::map<std::string, ClaimKey> by_value() const {
    const std::lock_guard lock(mutex_);
    return by_value_;
  }
  void advance(const std::map<std::string, ClaimKey>& keys) {
    const std::lock_guard lock(mutex_);
    for (const auto& [value, key] : keys) keep_furthest(by_value_, value, key);
  }

 private:
  mutable std::mutex mutex_;
  std::optional<ClaimKey> key_;
  std::map<std::string, ClaimKey> by_value_;
};

}  // namespace prescient::runner
