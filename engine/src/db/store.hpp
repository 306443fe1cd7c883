#pragma once
// Store: every SQL statement prescient runs at run time lives behind this class (the schema itself
// lives in sql/). Time always comes in as a parameter; the SQL never asks the server for now().
#include <vector>

#include <map>
#include <memory>
#include <span>

#include "prescient/check_records.hpp"
#include "runner/guards.hpp"
#include "prescient/job.hpp"
#include "prescient/settings.hpp"
#include "prescient/shard.hpp"

namespace soci {
class session;
}
namespace prescient::pq {
class PreparedStatements;
}

namespace prescient {

// An event to write into the outbox with a check's settlement.
struct EventRecord {
  std::string id;  // deterministic: a re-run of the same check run yields the same id
  std::string type;
  std::string source;
  TimePoint occurred_at;
  std::string payload;  // JSON text
};

// What to write for one check at the end of a run.
struct SettleItem {
  std::int64_t id = 0;
  Settlement settlement;
  std::optional<std::int64_t> run_micros;
  std::vector<EventRecord> events;
  std::vector<BufferedWrite> writes;  // run before the settlement, in its transaction (apply_writes)
};

class Store {
 public:
  // REQUIRES: db stays open for the Store's lifetime and is used by one thread at a time.
  explicit Store(soci::session& db);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  Settings settings();

  // Pending checks matching the filter, soonest first.
  std::vector<PendingCheck> pending(const PendingFilter& filter);
  // History rows matching the filter: newest first, or oldest first for a trace.
  std::vector<HistoryEntry> history(const HistoryFilter& filter, bool oldest_first = false);

  // --- Firing (the fast path: the row locks of the open transaction are the lease) ---
  void begin();
  void commit();
  void rollback();
  // What a claim leaves out: checks of classes the runner will not take now, checks it could not settle
  // in this slot (ids) and, for group claims, their groups.
  struct Exclusions {
    std::vector<std::string> jobs;
    std::vector<std::int64_t> ids;
    std::vector<std::string> groups;
  };
  // Claimed checks; a row whose payload the runner cannot read (a number beyond a double, say) comes
  // back apart, with the reason, so that it fails alone instead of failing the claim.
  struct Claimed {
    std::vector<Check> checks;
    std::vector<std::pair<Check, std::string>> unreadable;
    bool empty() const { return checks.empty() && unreadable.empty(); }
  };
  // REQUIRES an open transaction. Up to `limit` ungrouped checks due at `slot`, locked FOR UPDATE
  // SKIP LOCKED (so concurrent runners take disjoint sets); rows under a live written lease skipped.
  Claimed claim_due(TimePoint slot, TimePoint now, int limit, const Exclusions& excluded = {});
  // The server's plan for claim_due (EXPLAIN), to verify it is an index lookup, never a table scan.
  std::string claim_plan(TimePoint slot, TimePoint now);
  // REQUIRES an open transaction. Whole groups due at `slot` (up to `max_groups`), each group under a
  // transaction-level advisory lock so no other runner takes any check of it; ordered by group, id.
  Claimed claim_due_groups(TimePoint slot, int max_groups, const Exclusions& excluded = {});
  // One statement: finished checks move to history, the others get their new time and counts, events
  // of settled checks go to the outbox (duplicates ignored) and are announced with NOTIFY
  // prescient_event. Fast path (no token): REQUIRES an open transaction holding the rows. Slow path
  // (a lease token): only rows still leased under that token, with the lease live at `now`, are
  // settled; a result that comes back after its lease expired is discarded.
  struct Settled {
    std::int64_t checks = 0;
    std::int64_t events = 0;  // new ones
  };
  Settled settle(std::span<const SettleItem> items, const std::string& runner_id, TimePoint now,
                 std::optional<std::int64_t> lease_token = std::nullopt);

  // REQUIRES an open transaction. Runs each item's buffered writes under a savepoint of its own (only
  // items that have writes take one). Returns, by item index, the error of those whose writes failed:
  // their writes are rolled back, the others' stand, and the transaction stays usable. A write that
  // fails because the session or the server did (prescient/errors.hpp) throws: that is no check's fault.
  std::map<std::size_t, std::string> apply_writes(std::span<const SettleItem> items);

  // REQUIRES an open transaction. Savepoints, so a statement that fails does not take the transaction
  // (and the claim's row locks) with it.
  void savepoint(const std::string& name);
  void rollback_to(const std::string& name);
  void release_savepoint(const std::string& name);

  // REQUIRES an open transaction holding the rows. Writes a lease on them until `until`; returns its token.
  std::int64_t lease(std::span<const std::int64_t> ids, const std::string& runner_id, TimePoint until);
  // REQUIRES an open transaction. Locks and returns those of `ids` still leased under `token` with the
  // lease live at `now`: only they may be settled, so their writes run at most once.
  std::vector<std::int64_t> lock_live_leases(std::span<const std::int64_t> ids, std::int64_t token, TimePoint now);
  // Gives up a lease on checks that were not run (they are due again at once).
  void release(std::span<const std::int64_t> ids, std::int64_t token);


  // The earliest slot before `until` holding a pending check, at or after `from`.
  std::optional<TimePoint> next_overdue_slot(TimePoint from, TimePoint until);
  // Moves up to `limit` checks due at `slot` to `to` without running them. Returns how many moved.
  std::int64_t shift_slot(TimePoint slot, TimePoint to, int limit);

  // Puts the check `id`, finished as `failed`, back as pending at `at` with its attempts reset.
  // Throws NotFound when it is not a failed check, InvalidInput when it is pending again already or
  // its job key is taken by another pending check.
  PendingCheck revive_failed(std::int64_t id, TimePoint at);

 private:
  soci::session& db_;
  std::unique_ptr<pq::PreparedStatements> prepared_;  // the hot path's statements (claim, settle)
};

}  // namespace prescient
