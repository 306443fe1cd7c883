#pragma once
// The error kinds a caller must tell apart; each maps to one CLI exit code.
#include <stdexcept>
#include <string>

namespace prescient {

// Bad input from outside (flags, times, payloads, specs): exit 2, nothing written.
struct InvalidInput : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The thing asked for (a check id, a key, a schedule) does not exist: exit 3.
struct NotFound : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The database could not be reached or refused what prescient needs: exit 1.
struct DatabaseError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace prescient
