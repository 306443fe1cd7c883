#pragma once
// The error kinds a caller must tell apart; each maps to one CLI exit code.
#include <stdexcept>
#include <string>
#include <string_view>

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
class DatabaseError : public std::runtime_error {
 public:
  explicit DatabaseError(const std::string& message, std::string sqlstate = {})
      : std::runtime_error(message), sqlstate_(std::move(sqlstate)) {}
  // The server's SQLSTATE ("23505"); empty when the error did not come from the server (a lost connection,
  // a result prescient could not read). Decisions are made on it, never on the message's text.
  const std::string& sqlstate() const noexcept { return sqlstate_; }

 private:
  std::string sqlstate_;
};

// Whose fault a failed statement is, by its SQLSTATE's class: the session's or the server's when there is
// no SQLSTATE at all (the connection is gone), or it is a connection exception (08), insufficient resources
// (53), operator intervention such as a cancel or a shutdown (57), a system error (58) or an internal error
// (XX). Nothing about the statement would change that: retry later. (Whether the database refused one
// check's values, so that the check fails alone, is the server's to decide, where the settlement finds it:
// prescient.refused_for_its_values, sql/functions/073_runner_settle.sql.)
bool lost_session_or_server(std::string_view sqlstate);

}  // namespace prescient
