#pragma once
// Internal: what a runner thread needs of the database to fire checks, as an interface. PostgreSQL implements
// it (db/pg_runner_store.hpp, the statements); the runner thread's unit tests drive an in-memory fake
// (tests/unit/fake_runner_store.hpp) in milliseconds. The real-database tests stay the contract.
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "prescient/flow_limits.hpp"
#include "prescient/job.hpp"
#include "prescient/time.hpp"
#include "runner/claim_mark.hpp"
#include "runner/settlements.hpp"

namespace prescient::runner {

class RunnerStore {
 public:
  virtual ~RunnerStore() = default;

  // What a claim leaves out besides the checks of paused classes (prescient.paused_job, which every claim
  // leaves out): checks of classes the runner will not take now, checks it could not settle in this slot
  // (ids) and, for group claims, their groups.
  struct Exclusions {
    std::vector<std::string> jobs;
    std::vector<std::int64_t> ids;
    std::vector<std::string> groups;
  };
  // Claimed checks; a row whose payload the runner cannot read (a number beyond a double, say) comes back
  // apart, with the reason, so that it fails alone instead of failing the claim.
  struct Claimed {
    std::vector<Check> checks;
    std::vector<std::pair<Check, std::string>> unreadable;
    std::optional<ClaimKey> last;  // the last row's place in claim order (claim_due's rows)
    std::map<std::string, ClaimKey> last_by_value;  // claim_due_fair's: each value's last row's place
    bool empty() const { return checks.empty() && unreadable.empty(); }
  };
  using Settled = SettledCounts;

  // One transaction at a time. On the fast path its row locks are the lease of the claimed checks.
  virtual void begin() = 0;
  virtual void commit() = 0;
  virtual void rollback() noexcept = 0;  // when the connection is gone, the server has rolled back already
  // Savepoints within the open transaction: a statement that fails does not take it (and the claim's
  // row locks) with it. Rolling back to a savepoint leaves it set; setting one again under the same name
  // nests it (released with the transaction), as PostgreSQL's do.
  virtual void savepoint(const std::string& name) = 0;
  virtual void rollback_to(const std::string& name) = 0;

  // REQUIRES an open transaction. Up to `limit` ungrouped checks due at `slot` or, when flow control
  // deferred them to a time within the slot, up to `until`, locked FOR UPDATE SKIP LOCKED (so concurrent
  // runners take disjoint sets); rows under a live written lease are skipped. Each check's slot is the
  // time it is due (`slot`, or the time it was deferred to). In claim order (due time, priority, id), and
  // with `after`, only the rows after that place (runner/claim_mark.hpp).
  virtual Claimed claim_due(TimePoint slot, TimePoint until, TimePoint now, int limit, const Exclusions& excluded,
                            const std::optional<ClaimKey>& after) = 0;
  // REQUIRES an open transaction. Like claim_due at `slot` alone, but taking the values of the fair-share
  // limit's payload field in turn: up to limit * weight / (the values' weights) checks of each (a value's
  // weight is 1 unless the limit names it), values in order, the first `limit` values at most (the next
  // claim starts again from the first left). Each value's checks after its place in `after` (priority, id),
  // if it has one.
  virtual Claimed claim_due_fair(TimePoint slot, TimePoint now, int limit, const Exclusions& excluded,
                                 const FlowLimit& fair, const std::map<std::string, ClaimKey>& after) = 0;
  // REQUIRES an open transaction. Whole groups due at `slot` (up to `max_groups`), each under a
  // transaction-level advisory lock so no other runner takes any check of it; ordered by group, id.
  virtual Claimed claim_due_groups(TimePoint slot, int max_groups, const Exclusions& excluded) = 0;

  // REQUIRES an open transaction. Runs each item's buffered writes under a savepoint of its own. Returns,
  // by item index, the error of those whose writes failed (rolled back; the others stand). A write that
  // fails because the session or the server did throws: that is no check's fault.
  virtual std::map<std::size_t, std::string> apply_writes(std::span<const SettleItem> items) = 0;
  // Settles the items in the server (prescient.runner_settle): each answer judged (prescient.judge: the
  // guards, backoff, dead letters), finished checks move to history, the others get their new time and
  // counts, events of settled checks go to the outbox (duplicates ignored) and are announced. A check the
  // database refuses for its values (prescient.refused_for_its_values) is found, by chunks then halves, and
  // left unsettled, with the database's words; the others settle all the same. `in_chunks`: start in chunks.
  // Fast path (no token): REQUIRES an open transaction holding the rows. Slow path (a lease token): only
  // rows still leased under that token, with the lease live at `now`, are settled. Throws DatabaseError
  // with the SQLSTATE on any other failure (nothing of it applied).
  struct Refused {
    std::int64_t id = 0;
    std::string reason;  // the database's words and the SQLSTATE
  };
  struct Settlement {
    Settled counts;              // what became of the settled checks
    std::vector<Refused> refused;  // those left unsettled, in the items' order
    int statements = 0;          // how many the server ran: 1 when nothing was refused
  };
  virtual Settlement settle(std::span<const SettleItem> items, const std::string& runner_id, TimePoint now,
                            std::optional<std::int64_t> lease_token, const Judging& judging, bool in_chunks) = 0;

  // Answers in business time resolved to times, in one statement, by the rule every door uses
  // (prescient.business_problem and business_due, sql/functions/038 and 087): each a time counted from `now`
  // with the calendar version that computed it, or why it cannot be one (an unknown calendar, a delay that
  // is not one), in the order asked.
  struct BusinessDue {
    std::optional<TimePoint> at;
    std::optional<int> calendar_version;
    std::optional<std::string> problem;
  };
  virtual std::vector<BusinessDue> business_due(std::span<const BusinessDelay> asked, TimePoint now) = 0;
  // After a settlement, in its transaction: the timeline rows of the runs among `runs` whose answer was in
  // business time (SettleItem::timed_by) name its calendar, version and delay (prescient.runs_timed_by).
  // `since`: the settlement's now at the latest. Called only when some run has one.
  virtual void name_business_runs(std::span<const SettleItem> runs, TimePoint since) = 0;

  // The slow path's written lease. REQUIRES an open transaction holding the rows: writes a lease on them
  // until `until`; returns its token.
  virtual std::int64_t lease(std::span<const std::int64_t> ids, const std::string& runner_id, TimePoint until) = 0;
  // REQUIRES an open transaction. Locks and returns those of `ids` still leased under `token` with the
  // lease live at `now`: only they may be settled, so their writes run at most once.
  virtual std::vector<std::int64_t> lock_live_leases(std::span<const std::int64_t> ids, std::int64_t token,
                                                     TimePoint now) = 0;
  // Gives up a lease on checks that were not run (they are due again at once).
  virtual void release(std::span<const std::int64_t> ids, std::int64_t token) = 0;

  // A class's limits in force, as prescient.class_limits (sql/functions/071_class_limits.sql) resolves them:
  // the one home of their precedence (its row in the registry, its coded policy, the config file's defaults,
  // the settings) and of the bounds the runner needs.
  struct ClassLimits {
    GuardLimits limits;
    std::chrono::seconds timeout{0};  // at most a day
    // What makes its coded policy one the runner cannot honour (the policy was left out): the class is refused.
    std::optional<std::string> coded_problem;
    std::optional<std::chrono::seconds> timeout_cut_from;  // the registry's timeout, beyond a day: a day is used
    bool operator==(const ClassLimits&) const = default;
  };
  // The limits in force of each class of `coded` (by name, with its coded policy; an empty one for a class
  // refused), with the config file's defaults, in one statement.
  virtual std::map<std::string, ClassLimits> class_limits(const std::map<std::string, JobPolicy>& coded,
                                                          const JobPolicy& config) = 0;

  // Flow control (docs/flow-control.md). The limits in force.
  static constexpr Micros kReservationGrace{50000};
  virtual std::vector<FlowLimit> flow_limits() = 0;
  // A claimed check that a limit applies to, with the key value the limit gives it.
  struct FlowPair {
    std::int64_t id = 0;
    std::string limit;
    std::string key;
  };
  // An admitted check may start at `start`; a deferred one was moved to `until` by `deferred_by`.
  struct Admission {
    std::int64_t id = 0;
    std::optional<TimePoint> start;
    std::optional<std::string> deferred_by;
    std::optional<TimePoint> until;
  };
  // REQUIRES an open transaction holding the pairs' checks. Admits those their limits let start within
  // `pace` of now and moves the others to the time their budget allows (a concurrency place is looked
  // for again after `wait`; at most `places` are taken per key value). The caller must lease the
  // admitted checks in the same transaction: the lease is what holds a concurrency place. A check
  // deferred by a rate keeps its reservation when claimed no later than kReservationGrace after it.
  virtual std::vector<Admission> admit(std::span<const FlowPair> pairs, TimePoint now, Micros pace, Micros wait,
                                         int places) = 0;
  // The earliest time from `slot` to before `slot_end` at which a check of the slot waits: one due at
  // `slot` that another runner thread's claim holds, or one flow control deferred to later in the slot. Checks
  // under a live lease, of groups, of paused or excluded classes and excluded ids are left out.
  virtual std::optional<TimePoint> next_waiting(TimePoint slot, TimePoint slot_end, TimePoint now,
                                                const Exclusions& excluded) = 0;
};

}  // namespace prescient::runner
