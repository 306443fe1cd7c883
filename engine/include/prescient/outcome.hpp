#pragma once
// How a check finished: the outcome of its history row. One enumeration, and one mapping to the text
// that job_history.outcome, JSON and the CLI use.
#include <optional>
#include <string>
#include <string_view>

namespace prescient {

enum class Outcome {
  done,              // the job answered nothing: no need to look again
  cancelled,         // cancelled by an application (prescient cancel)
  failed,            // its runs failed max_attempts times in a row: a dead letter
  guard_max_checks,  // it asked to be looked at again after max_checks runs
  guard_past,        // it asked to be looked at again at or before the slot it ran at
  guard_horizon,     // it asked to be looked at again beyond max_horizon
  deadline_missed,   // a schedule's occurrence came later than its deadline
  overlap_skipped,   // a schedule's occurrence was not run: an earlier one was still pending or running
};

std::string_view to_string(Outcome outcome);
// Throws InvalidInput naming the text and the known outcomes.
Outcome parse_outcome(std::string_view text);
// "done, cancelled, failed, ...", for messages and help.
std::string known_outcomes();

}  // namespace prescient
