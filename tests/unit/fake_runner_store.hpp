#pragma once
// An in-memory RunnerStore for the runner thread's unit tests. It behaves as PostgreSQL does where the runner thread
// depends on it: a claim takes due rows no other claim holds, a settlement leaves the items refused
// unsettled and settles the others, savepoints undo what followed them, and only a commit applies
// settlements. Refusals are injected like the rules another tool adds to the real tables: an event of
// type "poison" is refused (a constraint on prescient.event), and so is any settlement of the ids in
// `refused_ids` (a constraint on the row itself). The slow path's leases are not modelled.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "prescient/errors.hpp"
#include "runner/runner_store.hpp"

namespace prescient::testing {

using namespace prescient::runner;  // the interfaces these stores implement

class FakeRunnerStore final : public RunnerStore {
 public:
  // The world, set up by the test.
  std::vector<Check> due;                          // pending checks; Check::slot is when each is due
  std::map<std::int64_t, std::string> unreadable;  // ids whose payload cannot be read, and why
  std::set<std::int64_t> refused_ids;              // any settlement of these is refused (SQLSTATE 23514)
  std::string server_failure;                      // when set, every settle fails with this SQLSTATE

  // What the runner thread did.
  std::vector<SettleItem> committed;
  std::vector<Exclusions> claims;  // what each claim left out
  std::vector<std::optional<ClaimKey>> claims_after;  // and where each started
  int settle_statements = 0, commits = 0, rollbacks = 0;
  std::vector<bool> settled_in_chunks;  // per settle call: whether it was asked to start in chunks

  void begin() override {
    open_ = true;
    pending_.clear();
    savepoints_.clear();
  }
  void commit() override {
    for (const SettleItem& item : pending_) apply(item);
    committed.insert(committed.end(), pending_.begin(), pending_.end());
    ++commits;
    end();
  }
  void rollback() noexcept override {
    if (!open_) return;
    ++rollbacks;
    end();
  }
  void savepoint(const std::string& name) override { savepoints_.push_back({name, pending_.size()}); }
  void rollback_to(const std::string& name) override { pending_.resize(find(name).size); }

  // In the order of `due`, which stands for claim order; a check's place in it is (its slot, 0, its id).
  Claimed claim_due(TimePoint slot, TimePoint until, TimePoint, int limit, const Exclusions& excluded,
                    const std::optional<ClaimKey>& after) override {
    claims.push_back(excluded);
    claims_after.push_back(after);
    Claimed out;
    for (const Check& c : due) {
      if (static_cast<int>(out.checks.size() + out.unreadable.size()) == limit) break;
      const ClaimKey place{.due = c.slot, .id = c.id};
      const bool left_out = c.slot < slot || c.slot > std::max(slot, until) || claimed_.contains(c.id) || c.group_key ||
                            std::ranges::count(excluded.ids, c.id) > 0 || std::ranges::count(excluded.jobs, c.job) > 0 ||
                            (after && place <= *after);
      if (left_out) continue;
      claimed_.insert(c.id);
      out.last = place;
      if (const auto why = unreadable.find(c.id); why != unreadable.end()) {
        out.unreadable.emplace_back(c, why->second);
      } else {
        out.checks.push_back(c);
      }
    }
    return out;
  }
  Claimed claim_due_fair(TimePoint slot, TimePoint now, int limit, const Exclusions& excluded, const FlowLimit&,
                         const std::map<std::string, ClaimKey>&) override {
    return claim_due(slot, slot, now, limit, excluded, std::nullopt);
  }
  Claimed claim_due_groups(TimePoint, int, const Exclusions&) override { return {}; }

  std::map<std::size_t, std::string> apply_writes(std::span<const SettleItem>) override { return {}; }
  // As prescient.runner_settle: the refused items come back unsettled with the database's words, the others
  // settle (how the server finds them is SQL's, tested against PostgreSQL in tests/db/isolation_test.cpp).
  Settlement settle(std::span<const SettleItem> items, const std::string&, TimePoint, std::optional<std::int64_t>,
                    const Judging&, bool in_chunks) override {
    ++settle_statements;
    settled_in_chunks.push_back(in_chunks);
    if (!server_failure.empty()) throw DatabaseError("cannot settle checks: the server failed", server_failure);
    Settlement out{.statements = 1};
    Settled& settled = out.counts;
    for (const SettleItem& item : items) {
      const bool poisoned = std::ranges::any_of(item.events, [](const EventRecord& e) { return e.type == "poison"; });
      if (poisoned || refused_ids.contains(item.id)) {
        out.refused.push_back({.id = item.id, .reason = "new row violates check constraint \"no_poison\" (SQLSTATE 23514)"});
        continue;
      }
      settled.events += static_cast<std::int64_t>(item.events.size());
      switch (kind_of(item)) {
        case Kind::done: ++settled.done; break;
        case Kind::rescheduled: ++settled.rescheduled; break;
        case Kind::retried: ++settled.retried; break;
        case Kind::failed: ++settled.failed; break;
      }
      pending_.push_back(item);
      ++settled.checks;
    }
    return out;
  }

  std::int64_t lease(std::span<const std::int64_t> ids, const std::string&, TimePoint) override {
    leased.insert(leased.end(), ids.begin(), ids.end());
    return 1;
  }
  // Business time is SQL's (tests/db/business_delay_test.cpp): here, every answer is a problem.
  std::vector<BusinessDue> business_due(std::span<const BusinessDelay> asked, TimePoint) override {
    return std::vector<BusinessDue>(asked.size(), BusinessDue{.problem = "no calendars in the fake store"});
  }
  // None is ever resolved here (business_due above), so no run is ever named.
  void name_business_runs(std::span<const SettleItem>, TimePoint) override {}
  std::vector<std::int64_t> lock_live_leases(std::span<const std::int64_t> ids, std::int64_t, TimePoint) override {
    return {ids.begin(), ids.end()};
  }
  void release(std::span<const std::int64_t>, std::int64_t) override {}
  // The limits in force a test set for a class, else `any_class_limits` (their precedence is
  // prescient.class_limits', tested against PostgreSQL in tests/db/class_limits_test.cpp).
  std::map<std::string, ClassLimits> class_limits(const std::map<std::string, JobPolicy>& coded,
                                                  const JobPolicy& config) override {
    limits_asked.push_back({coded, config});
    std::map<std::string, ClassLimits> out;
    for (const auto& [job, policy] : coded) {
      const auto set = limits_by_class.find(job);
      out[job] = set == limits_by_class.end() ? any_class_limits : set->second;
    }
    return out;
  }

  // Flow control: the limits given, every check admitted at once (the real admission is SQL, tested
  // against PostgreSQL in tests/db/flow_control_test.cpp); the pairs of each admission are kept.
  std::vector<FlowLimit> flow_limits() override { return limits; }
  std::vector<Admission> admit(std::span<const FlowPair> pairs, TimePoint now, Micros, Micros, int) override {
    admitted_pairs.emplace_back(pairs.begin(), pairs.end());
    std::vector<Admission> out;
    for (const FlowPair& p : pairs) out.push_back({.id = p.id, .start = now});
    return out;
  }
  std::optional<TimePoint> next_waiting(TimePoint slot, TimePoint slot_end, TimePoint,
                                        const Exclusions&) override {
    std::optional<TimePoint> next;
    for (const Check& c : due) {
      const bool in_slot = c.slot >= slot && c.slot < slot_end;
      if (!claimed_.contains(c.id) && in_slot && (!next || c.slot < *next)) next = c.slot;
    }
    return next;
  }
  std::vector<FlowLimit> limits;
  std::map<std::string, ClassLimits> limits_by_class;
  ClassLimits any_class_limits{.timeout = std::chrono::seconds{30}};  // the settings' defaults
  std::vector<std::pair<std::map<std::string, JobPolicy>, JobPolicy>> limits_asked;  // coded policies, config
  std::vector<std::vector<FlowPair>> admitted_pairs;
  std::vector<std::int64_t> leased;

  const Check* pending_check(std::int64_t id) const {
    const auto it = std::ranges::find_if(due, [&](const Check& c) { return c.id == id; });
    return it == due.end() ? nullptr : &*it;
  }

 private:
  struct Savepoint {
    std::string name;
    std::size_t size;
  };
  Savepoint find(const std::string& name) const {
    for (auto it = savepoints_.rbegin(); it != savepoints_.rend(); ++it) {
      if (it->name == name) return *it;
    }
    throw DatabaseError("no savepoint " + name, "3B001");
  }
  // A stand-in for prescient.judge, whose rules are SQL's and tested against PostgreSQL
  // (tests/db/judge_test.cpp): enough for the runner thread's tests. A failure is retried a minute after its slot
  // until its class's attempts are used up; an answer reschedules; none is done. No guards.
  enum class Kind { done, rescheduled, retried, failed };
  static Kind kind_of(const SettleItem& item) {
    if (item.answer.failed) return item.check.attempts + 1 >= item.check.limits.max_attempts ? Kind::failed : Kind::retried;
    return item.answer.next ? Kind::rescheduled : Kind::done;
  }
  // A settled check leaves `due` when finished, or is due again at its next time.
  void apply(const SettleItem& item) {
    const auto it = std::ranges::find_if(due, [&](const Check& c) { return c.id == item.id; });
    if (it == due.end()) return;
    const Kind kind = kind_of(item);
    if (kind == Kind::done || kind == Kind::failed) {
      due.erase(it);
      return;
    }
    it->slot = kind == Kind::retried ? item.check.slot + std::chrono::minutes(1) : *item.answer.next;
    if (item.payload_update) it->payload.update(nlohmann::json::parse(*item.payload_update));
    it->check_count = item.check.check_count + (kind == Kind::rescheduled ? 1 : 0);
    it->attempts = kind == Kind::retried ? item.check.attempts + 1 : 0;
  }
  void end() {
    open_ = false;
    pending_.clear();
    savepoints_.clear();
    claimed_.clear();
  }

  bool open_ = false;
  std::vector<SettleItem> pending_;  // settled in the open transaction, applied at commit
  std::vector<Savepoint> savepoints_;
  std::set<std::int64_t> claimed_;
};

}  // namespace prescient::testing
