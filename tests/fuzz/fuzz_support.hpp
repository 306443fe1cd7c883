#pragma once
// libFuzzer entry points for prescient's parsers of outside input. A parser may refuse its input with
// InvalidInput (that is its job); anything else escaping it, a crash or a sanitizer report is a bug.
// The corpus of each target lives in tests/fuzz/corpus/<target>/: seeds, and every input that ever
// crashed it, kept as a regression case. scripts/fuzz.sh builds and runs them.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "prescient/errors.hpp"

namespace prescient::fuzz {

inline std::string_view text_of(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Runs parse(text), accepting InvalidInput as an answer.
template <typename Parse>
void refuse_or_accept(Parse parse) {
  try {
    parse();
  } catch (const InvalidInput&) {
  }
}

}  // namespace prescient::fuzz
