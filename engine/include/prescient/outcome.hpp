#pragma once
// How a check finished: the outcome of its history row, by its name. The list of outcomes and what each
// means has one home, prescient.outcomes() (sql/functions/030_enqueue_rules.sql). C++ names the outcomes it
// refers to below; any other name the database holds passes through as it is (JSON, the CLI, the
// dashboard), so a new outcome needs no change here. tests/db/outcomes_test.cpp checks that every name
// below is in the list.
#include <compare>
#include <string>
#include <string_view>

namespace prescient {

class Outcome {
 public:
  static const Outcome done;              // the job answered nothing: no need to look again
  static const Outcome cancelled;         // cancelled by an application (prescient cancel)
  static const Outcome failed;            // its runs failed max_attempts times in a row: a dead letter
  static const Outcome guard_max_checks;  // it asked to be looked at again after max_checks runs
  static const Outcome guard_past;        // it asked to be looked at again at or before the slot it ran at
  static const Outcome guard_horizon;     // it asked to be looked at again beyond max_horizon
  static const Outcome deadline_missed;   // a schedule's occurrence came later than its deadline
  static const Outcome overlap_skipped;   // a schedule's occurrence was not run: an earlier one was pending

  // Any name of an outcome's form; whether the database knows it is the database's to say.
  explicit Outcome(std::string_view name) : name_(name) {}
  const std::string& name() const { return name_; }
  auto operator<=>(const Outcome&) const = default;

 private:
  std::string name_;
};

// Defined here, not in a .cpp, so that they are initialised before any static of a file that includes this
// header uses them.
inline const Outcome Outcome::done{"done"};
inline const Outcome Outcome::cancelled{"cancelled"};
inline const Outcome Outcome::failed{"failed"};
inline const Outcome Outcome::guard_max_checks{"guard_max_checks"};
inline const Outcome Outcome::guard_past{"guard_past"};
inline const Outcome Outcome::guard_horizon{"guard_horizon"};
inline const Outcome Outcome::deadline_missed{"deadline_missed"};
inline const Outcome Outcome::overlap_skipped{"overlap_skipped"};

inline std::string_view to_string(const Outcome& outcome) { return outcome.name(); }
// An outcome named by a caller (a flag, a file): throws InvalidInput unless it has an outcome's form,
// lower-case letters and underscores. The database refuses a name of that form it does not know, with
// its list (prescient.known_outcome, the dedupe rule).
Outcome parse_outcome(std::string_view text);

}  // namespace prescient
