#pragma once
// The hostile checks the fault-isolation tests mix with good ones: the `hostile` test class
// (tests/plugins/hostile_jobs.cpp, chosen by payload.do) and executables for the `command` class, with
// the outcome each must end in. Shared by the in-process tests and the property test under real daemons.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "prescient/outcome.hpp"

namespace prescient::testing {

struct HostileKind {
  std::string name;     // payload.do of `hostile`, or the executable of `command`
  std::string job;      // "hostile" or "command"
  Outcome outcome;      // the history outcome it ends in
  bool retried;         // a failure: it ends as `failed` after max_attempts runs
  std::string error;    // a fragment of its last_error ("" when it has none)
  bool slow;            // blocks its worker for about its timeout (plus the grace, for `hang`)

  nlohmann::json payload() const {
    return job == "command" ? nlohmann::json{{"command", name}} : nlohmann::json{{"do", name}};
  }
};

inline const std::string kReplacement = "\xEF\xBF\xBD";  // U+FFFD, what a byte that cannot be stored becomes

inline std::vector<HostileKind> hostile_kinds() {
  return {
      {"error_bad_utf8", "hostile", Outcome::failed, true, "upstream said " + kReplacement + kReplacement, false},
      {"error_huge", "hostile", Outcome::failed, true, "bytes in all]", false},
      {"throw_int", "hostile", Outcome::failed, true, "non-standard exception", false},
      {"next_9999", "hostile", Outcome::guard_horizon, false, "", false},
      {"next_1960", "hostile", Outcome::guard_past, false, "", false},
      {"event_bad_utf8", "hostile", Outcome::done, false, "", false},
      {"event_nul_type", "hostile", Outcome::done, false, "", false},
      {"event_nul_payload", "hostile", Outcome::failed, true, "a string of the payload contains a NUL byte", false},
      {"event_bad_id", "hostile", Outcome::failed, true, "event 1's id is not valid UTF-8", false},
      {"event_dup_ids", "hostile", Outcome::done, false, "", false},
      {"event_far_time", "hostile", Outcome::failed, true, "outside the years 1 to 9999", false},
      {"events_too_many", "hostile", Outcome::failed, true, "returned 10001 events", false},
      {"write_violates", "hostile", Outcome::failed, true, "violates check constraint", false},
      {"write_nul", "hostile", Outcome::failed, true, "parameter $1 contains a NUL byte", false},
      {"hang", "hostile", Outcome::failed, true, "did not return within its timeout of 1s", true},
      {"crash", "command", Outcome::failed, true, "crash was killed by signal 11", false},
      {"bad_stderr", "command", Outcome::failed, true, "bad_stderr exited with 3: broken " + kReplacement + kReplacement, false},
      {"bad_stdout", "command", Outcome::failed, true, "bad_stdout printed '" + kReplacement + kReplacement + "', not a time",
       false},
      {"detach", "command", Outcome::failed, true, "detach was killed at the timeout", true},
  };
}

// A directory with the executables the command kinds name; the caller removes it.
std::string make_hostile_commands_dir();

}  // namespace prescient::testing
