#include "prescient/shard.hpp"

#include <charconv>

#include "prescient/errors.hpp"

namespace prescient {

Shard parse_shard(std::string_view text) {
  const auto refuse = [&](const char* why) {
    return InvalidInput("invalid shard '" + std::string(text) + "': " + why + " (write I/N, e.g. 0/2)");
  };
  const std::size_t slash = text.find('/');
  if (slash == std::string_view::npos) throw refuse("no '/'");
  Shard shard;
  const auto parse = [&](std::string_view part, int& out) {
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), out);
    if (part.empty() || ec != std::errc() || end != part.data() + part.size()) throw refuse("not a whole number");
  };
  parse(text.substr(0, slash), shard.index);
  parse(text.substr(slash + 1), shard.count);
  if (shard.count < 1 || shard.count > 1024) throw refuse("N must be between 1 and 1024");
  if (shard.index < 0 || shard.index >= shard.count) throw refuse("I must be between 0 and N-1");
  return shard;
}

}  // namespace prescient
