// parse_duration: what --in, --older-than and deadlines accept. An accepted duration formats and
// parses back to itself.
#include <cstdlib>

#include "fuzz_support.hpp"
#include "prescient/duration.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  prescient::fuzz::refuse_or_accept([&] {
    const auto d = prescient::parse_duration(prescient::fuzz::text_of(data, size));
    if (prescient::parse_duration(prescient::format_duration(d)) != d) std::abort();
  });
  return 0;
}
