// A payload as the CLI and the bulk file take it: JSON text, then prescient's own rules (an object,
// valid UTF-8, no NUL). Parsing errors are refusals; an accepted payload dumps without throwing.
#include <nlohmann/json.hpp>

#include "fuzz_support.hpp"
#include "core/text_rules.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto payload = nlohmann::json::parse(prescient::fuzz::text_of(data, size), nullptr, false);
  if (payload.is_discarded() || !payload.is_object()) return 0;
  if (prescient::core::payload_text_problem(payload)) return 0;
  (void)payload.dump();  // throws on invalid UTF-8, which payload_text_problem must have refused
  return 0;
}
