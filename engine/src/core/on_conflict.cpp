// The names of the on-conflict policies: what the CLI reads and what the enqueue statements send
// (db/enqueue.cpp). Here in core/, not with the Client in api/, so that db/ can name a policy without
// calling up into api/.
#include <string>

#include "prescient/client.hpp"
#include "prescient/errors.hpp"

namespace prescient {

OnConflict parse_on_conflict(std::string_view text) {
  if (text == "error") return OnConflict::error;
  if (text == "replace") return OnConflict::replace;
  if (text == "keep") return OnConflict::keep;
  if (text == "debounce") return OnConflict::debounce;
  if (text == "collect") return OnConflict::collect;
  throw InvalidInput("invalid on-conflict policy '" + std::string(text) +
                     "': use error, replace, keep, debounce or collect");
}

std::string_view to_string(OnConflict policy) {
  switch (policy) {
    case OnConflict::error: return "error";
    case OnConflict::replace: return "replace";
    case OnConflict::keep: return "keep";
    case OnConflict::debounce: return "debounce";
    case OnConflict::collect: return "collect";
  }
  return "error";
}

}  // namespace prescient
