#pragma once
// In-memory stores for a whole slot runner or daemon (runner/upkeep_store.hpp): one queue, a
// FakeRunnerStore whose `due` checks the sweep looks at and the runner threads claim from, and an upkeep store
// over the same queue that records what the runner asked of it. Every store opened is a view of that one
// queue, so a runner that drops a store after a failure and opens another finds the queue as it was (one
// runner thread: the queue has one transaction at a time).
// Failures are injected: to open, like a database that is not up yet; to make partitions, like a lock
// not granted.
#include <memory>
#include <utility>
#include <vector>

#include "fake_runner_store.hpp"
#include "prescient/clock.hpp"
#include "prescient/errors.hpp"
#include "runner/upkeep_store.hpp"

namespace prescient::testing {

class FakeStores final : public StoreOpener {
 public:
  FakeRunnerStore queue;        // the pending checks and what the runner threads did
  Settings settings;            // what read_settings answers (a 1-minute grid)
  int upkeep_open_failures = 0;  // so many opens of the upkeep store fail first (SQLSTATE 08001)
  int thread_open_failures = 0;  // so many opens of a runner thread's store fail first (SQLSTATE 08001)
  const Clock* clock = nullptr;  // when set, each open of a store is recorded with its time
  // With `clock`: so many reads of the server's clock at or after `clock_reads_fail_from` fail (08006),
  // like a session that died with its server.
  int clock_read_failures = 0;
  TimePoint clock_reads_fail_from{};
  int partition_failures = 0;    // so many looks at the history partitions fail first (SQLSTATE 55P03)

  // What the runner asked of the upkeep store.
  std::vector<std::pair<TimePoint, long>> seen;  // record_runner_seen: the slot, the checks claimed in it
  std::vector<TimePoint> partition_calls;  // ensure_history_partitions: when, failed or not
  int upkeep_opens = 0;
  std::vector<TimePoint> upkeep_opened_at, thread_opened_at;  // with `clock`: when each open was tried

  std::unique_ptr<RunnerStore> open_thread_store() override {
    if (clock) thread_opened_at.push_back(clock->now());
    fail_to_open(thread_open_failures);
    return std::make_unique<QueueView>(queue);
  }
  std::unique_ptr<UpkeepStore> open_upkeep_store() override {
    ++upkeep_opens;
    if (clock) upkeep_opened_at.push_back(clock->now());
    fail_to_open(upkeep_open_failures);
    return std::make_unique<Upkeep>(*this);
  }
  std::unique_ptr<soci::session> open_job_session() override { throw std::logic_error("no database in unit tests"); }

 private:
  static void fail_to_open(int& failures_left) {
    if (failures_left == 0) return;
    --failures_left;
    throw DatabaseError("could not connect to the server: Connection refused", "08001");
  }

  // A runner thread's store: the queue's, under the runner thread's ownership.
  class QueueView final : public RunnerStore {
   public:
    explicit QueueView(FakeRunnerStore& queue) : q_(queue) {}
    void begin() override { q_.begin(); }
    void commit() override { q_.commit(); }
    void rollback() noexcept override { q_.rollback(); }
    void savepoint(const std::string& name) override { q_.savepoint(name); }
    void rollback_to(const std::string& name) override { q_.rollback_to(name); }
    Claimed claim_due(TimePoint slot, TimePoint until, TimePoint now, int limit, const Exclusions& excluded,
                      const std::optional<ClaimKey>& after) override {
      return q_.claim_due(slot, until, now, limit, excluded, after);
    }
    Claimed claim_due_fair(TimePoint slot, TimePoint now, int limit, const Exclusions& excluded,
                           const FlowLimit& fair, const std::map<std::string, ClaimKey>& after) override {
      return q_.claim_due_fair(slot, now, limit, excluded, fair, after);
    }
    Claimed claim_due_groups(TimePoint slot, int max_groups, const Exclusions& excluded) override {
      return q_.claim_due_groups(slot, max_groups, excluded);
    }
    std::map<std::size_t, std::string> apply_writes(std::span<const SettleItem> items) override {
      return q_.apply_writes(items);
    }
    Settlement settle(std::span<const SettleItem> items, const std::string& runner_id, TimePoint now,
                      std::optional<std::int64_t> token, const runner::Judging& judging, bool in_chunks) override {
      return q_.settle(items, runner_id, now, token, judging, in_chunks);
    }
    std::int64_t lease(std::span<const std::int64_t> ids, const std::string& runner_id, TimePoint until) override {
      return q_.lease(ids, runner_id, until);
    }
    std::vector<BusinessDue> business_due(std::span<const BusinessDelay> asked, TimePoint now) override {
      return q_.business_due(asked, now);
    }
    void name_business_runs(std::span<const SettleItem> runs, TimePoint since) override {
      q_.name_business_runs(runs, since);
    }
    std::vector<std::int64_t> lock_live_leases(std::span<const std::int64_t> ids, std::int64_t token,
                                               TimePoint now) override {
      return q_.lock_live_leases(ids, token, now);
    }
    void release(std::span<const std::int64_t> ids, std::int64_t token) override { q_.release(ids, token); }
    std::map<std::string, ClassLimits> class_limits(const std::map<std::string, JobPolicy>& coded,
                                                    const JobPolicy& config) override {
      return q_.class_limits(coded, config);
    }
    std::vector<FlowLimit> flow_limits() override { return q_.flow_limits(); }
    std::vector<Admission> admit(std::span<const FlowPair> pairs, TimePoint now, Micros pace, Micros wait,
                                 int places) override {
      return q_.admit(pairs, now, pace, wait, places);
    }
    std::optional<TimePoint> next_waiting(TimePoint slot, TimePoint slot_end, TimePoint now,
                                          const Exclusions& excluded) override {
      return q_.next_waiting(slot, slot_end, now, excluded);
    }

   private:
    FakeRunnerStore& q_;
  };

  // The sweep's look-ups and moves over the queue, as the statements do them over future_job.
  class Upkeep final : public UpkeepStore {
   public:
    explicit Upkeep(FakeStores& stores) : s_(stores) {}
    Settings read_settings() override { return s_.settings; }
    std::optional<TimePoint> next_overdue_slot(TimePoint from, TimePoint until) override {
      std::optional<TimePoint> next;
      for (const Check& c : s_.queue.due) {
        if (c.slot >= from && c.slot < until && (!next || c.slot < *next)) next = c.slot;
      }
      return next;
    }
    std::int64_t shift_slot(TimePoint slot, TimePoint to, int limit) override {
      std::int64_t moved = 0;
      for (Check& c : s_.queue.due) {
        if (moved == limit) break;
        if (c.slot == slot) {
          c.slot = to;
          ++moved;
        }
      }
      return moved;
    }
    int ensure_history_partitions(TimePoint now) override {
      s_.partition_calls.push_back(now);
      if (s_.partition_failures > 0) {
        --s_.partition_failures;
        throw DatabaseError("could not obtain lock on relation \"job_history\"", "55P03");
      }
      return 0;
    }
    void record_runner_seen(const std::string&, const std::string&, TimePoint slot, long claimed, TimePoint) override {
      s_.seen.emplace_back(slot, claimed);
    }
    std::vector<std::string> paused_classes() override { return {}; }
    std::optional<TimePoint> next_lease_end(TimePoint, TimePoint) override { return std::nullopt; }
    Micros server_clock_offset(const Clock&) override {
      if (s_.clock != nullptr && s_.clock_read_failures > 0 && s_.clock->now() >= s_.clock_reads_fail_from) {
        --s_.clock_read_failures;
        throw DatabaseError("server closed the connection unexpectedly", "08006");
      }
      return Micros{0};
    }

   private:
    FakeStores& s_;
  };
};

}  // namespace prescient::testing
