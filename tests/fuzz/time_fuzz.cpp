// parse_time: ISO-8601 with an offset, or @<unix seconds>. An accepted time formats and parses back.
#include <cstdlib>

#include "fuzz_support.hpp"
#include "prescient/time_text.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  prescient::fuzz::refuse_or_accept([&] {
    const auto t = prescient::parse_time(prescient::fuzz::text_of(data, size));
    if (prescient::parse_time(prescient::format_time(t)) != t) std::abort();
  });
  return 0;
}
