#pragma once
// Internal: a 64-bit FNV-1a fingerprint as 16 hex digits. Enough to notice an edited migration or to
// name a prepared statement after its text; not a security measure.
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace prescient {

inline std::string fnv1a_hex(std::string_view text) {
  std::uint64_t hash = 14695981039346656037ULL;
  for (const unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ULL;
  }
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(hash));
  return out;
}

}  // namespace prescient
