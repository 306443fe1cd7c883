#pragma once
// Internal: the runner's stores on PostgreSQL (the statements are in runner_statements.hpp): what a runner thread
// asks of the database (RunnerStore), and what the slot runner asks besides (UpkeepStore).
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "db/transaction.hpp"
#include "prescient/slot_runner.hpp"
#include "runner/runner_store.hpp"
#include "runner/upkeep_store.hpp"

namespace soci {
class session;
}
namespace prescient::db::pq {
class PreparedStatements;
}

namespace prescient::db {

class PgRunnerStore final : public runner::RunnerStore, public runner::UpkeepStore {
 public:
  // Owns the session: a runner thread's or the sweep's connection.
  explicit PgRunnerStore(std::unique_ptr<soci::session> db,
                         StatementPreparation preparation = StatementPreparation::automatic);
  // REQUIRES: db stays open for the store's lifetime and is used by one thread at a time.
  explicit PgRunnerStore(soci::session& db, StatementPreparation preparation = StatementPreparation::automatic);
  ~PgRunnerStore() override;
  PgRunnerStore(const PgRunnerStore&) = delete;
  PgRunnerStore& operator=(const PgRunnerStore&) = delete;

  // How long commit() waits for the server's answer before it closes the connection, the outcome unknown
  // (never a cancel: docs/operations.md, "High availability"). A settlement's COMMIT takes milliseconds;
  // one that waits this long waits for a synchronous standby that may never come (a frozen leader's), and
  // the runner then drops the session and tries again, as after any lost connection.
  static constexpr std::chrono::seconds kCommitLimit{30};
  void set_commit_limit(std::chrono::milliseconds limit) { commit_limit_ = limit; }

  void begin() override;
  void commit() override;
  void rollback() noexcept override;
  void savepoint(const std::string& name) override;
  void rollback_to(const std::string& name) override;
  Claimed claim_due(TimePoint slot, TimePoint until, TimePoint now, int limit, const Exclusions& excluded,
                    const std::optional<runner::ClaimKey>& after) override;
  Claimed claim_due_fair(TimePoint slot, TimePoint now, int limit, const Exclusions& excluded, const FlowLimit& fair,
                         const std::map<std::string, runner::ClaimKey>& after) override;
  Claimed claim_due_groups(TimePoint slot, int max_groups, const Exclusions& excluded) override;
  std::map<std::size_t, std::string> apply_writes(std::span<const runner::SettleItem> items) override;
  Settlement settle(std::span<const runner::SettleItem> items, const std::string& runner_id, TimePoint now,
                    std::optional<std::int64_t> lease_token, const runner::Judging& judging, bool in_chunks) override;
  std::int64_t lease(std::span<const std::int64_t> ids, const std::string& runner_id, TimePoint until) override;
  std::vector<BusinessDue> business_due(std::span<const BusinessDelay> asked, TimePoint now) override;
  void name_business_runs(std::span<const runner::SettleItem> runs, TimePoint since) override;
  std::vector<std::int64_t> lock_live_leases(std::span<const std::int64_t> ids, std::int64_t token,
                                             TimePoint now) override;
  void release(std::span<const std::int64_t> ids, std::int64_t token) override;
  std::map<std::string, ClassLimits> class_limits(const std::map<std::string, JobPolicy>& coded,
                                                  const JobPolicy& config) override;
  std::vector<FlowLimit> flow_limits() override;
  std::vector<Admission> admit(std::span<const FlowPair> pairs, TimePoint now, Micros pace, Micros wait,
                                int places) override;
  std::optional<TimePoint> next_waiting(TimePoint slot, TimePoint slot_end, TimePoint now,
                                        const Exclusions& excluded) override;

  Settings read_settings() override;
  std::optional<TimePoint> next_overdue_slot(TimePoint from, TimePoint until) override;
  std::int64_t shift_slot(TimePoint slot, TimePoint to, int limit) override;
  int ensure_history_partitions(TimePoint now) override;
  void record_runner_seen(const std::string& runner_id, const std::string& shard, TimePoint slot, long claimed,
                          TimePoint now) override;
  Micros server_clock_offset(const Clock& local) override;
  std::vector<std::string> paused_classes() override;
  std::optional<TimePoint> next_lease_end(TimePoint now, TimePoint before) override;

  // The server's plan for claim_due (EXPLAIN), to verify it is an index lookup, never a table scan.
  std::string claim_plan(TimePoint slot, TimePoint now);

 private:
  std::unique_ptr<soci::session> owned_;
  soci::session& db_;
  std::unique_ptr<pq::PreparedStatements> prepared_;  // the hot path's statements (claim, settle)
  std::optional<db::Transaction> transaction_;
  std::chrono::milliseconds commit_limit_ = kCommitLimit;
};

}  // namespace prescient::db
