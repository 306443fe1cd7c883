#include "prescient/errors.hpp"

namespace prescient {
namespace {

bool in_class(std::string_view sqlstate, std::initializer_list<std::string_view> classes) {
  for (const std::string_view c : classes) {
    if (sqlstate.starts_with(c)) return true;
  }
  return false;
}

}  // namespace

bool lost_session_or_server(std::string_view sqlstate) {
  return sqlstate.size() != 5 || in_class(sqlstate, {"08", "53", "57", "58", "XX"});
}

}  // namespace prescient
