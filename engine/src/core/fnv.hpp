#pragma once
// Internal: a 64-bit FNV-1a fingerprint, and as 16 hex digits. Enough to notice an edited migration, to
// name a prepared statement after its text or to pick a schedule's jitter; not a security measure.
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace prescient::core {

inline std::uint64_t fnv1a(std::string_view text) {
  std::uint64_t hash = 14695981039346656037ULL;
  for (const unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ULL;
  }
  return hash;
}

inline std::string fnv1a_hex(std::string_view text) {
  const std::uint64_t hash = fnv1a(text);
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(hash));
  return out;
}

}  // namespace prescient::core
