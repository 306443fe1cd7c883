// parse_shard: --shard I/N.
#include "fuzz_support.hpp"
#include "prescient/shard.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  prescient::fuzz::refuse_or_accept([&] { prescient::parse_shard(prescient::fuzz::text_of(data, size)); });
  return 0;
}
