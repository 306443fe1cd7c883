#include "prescient/slot_runner.hpp"

#include <soci/soci.h>  // complete, for the jobs' session opener handed to each runner thread
#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "prescient/errors.hpp"
#include "prescient/time_text.hpp"
#include "runner/upkeep_store.hpp"
#include "runner/runner_thread.hpp"

namespace prescient {

using namespace prescient::runner;

struct SlotRunner::Sessions {
  std::vector<std::unique_ptr<RunnerThread>> runner_threads;
  std::unique_ptr<UpkeepStore> upkeep;  // the settings, the sweep's look-ups and the upkeep
};

template <class Fn>
auto SlotRunner::with_upkeep(Fn fn) {
  if (!sessions_->upkeep) sessions_->upkeep = stores_->open_upkeep_store();
  try {
    return fn(*sessions_->upkeep);
  } catch (...) {
    sessions_->upkeep.reset();
    throw;
  }
}

void SlotReport::add(const SlotReport& o) {
  claimed += o.claimed;
  done += o.done;
  rescheduled += o.rescheduled;
  retried += o.retried;
  failed += o.failed;
  guarded += o.guarded;
  events += o.events;
  shifted += o.shifted;
  discarded += o.discarded;
  deferred += o.deferred;
  if (o.first_claim_at && (!first_claim_at || *o.first_claim_at < *first_claim_at)) first_claim_at = o.first_claim_at;
  if (o.last_commit_at && (!last_commit_at || *o.last_commit_at > *last_commit_at)) last_commit_at = o.last_commit_at;
  batch_seconds.insert(batch_seconds.end(), o.batch_seconds.begin(), o.batch_seconds.end());
}

StatementPreparation parse_statement_preparation(std::string_view text) {
  if (text == "auto") return StatementPreparation::automatic;
  if (text == "on") return StatementPreparation::on;
  if (text == "off") return StatementPreparation::off;
  throw InvalidInput("invalid --prepared-statements '" + std::string(text) + "': use auto, on or off");
}

SweepMode parse_sweep_mode(std::string_view text) {
  if (text == "run") return SweepMode::run;
  if (text == "shift") return SweepMode::shift;
  throw InvalidInput("invalid sweep mode '" + std::string(text) + "': use run or shift");
}

SlotRunner::SlotRunner(RunnerOptions options, const Registry& registry, const Clock& clock,
                       std::shared_ptr<StoreOpener> stores)
    : options_(std::move(options)),
      registry_(registry),
      clock_(clock),
      stores_(std::move(stores)),
      sessions_(std::make_unique<Sessions>()) {
  if (options_.workers < 1 || options_.workers > kMaxWorkers) {
    throw InvalidInput("invalid --workers " + std::to_string(options_.workers) + ": use 1 to " +
                       std::to_string(kMaxWorkers));
  }
  if (options_.batch_size < 1) throw InvalidInput("invalid batch size " + std::to_string(options_.batch_size));
  if (options_.batch_deadline < std::chrono::milliseconds{1}) {
    throw InvalidInput("invalid batch deadline " + std::to_string(options_.batch_deadline.count()) + "ms");
  }
  if (options_.max_abandoned_per_class < 1) {
    throw InvalidInput("invalid cap of abandoned jobs per class " + std::to_string(options_.max_abandoned_per_class));
  }
  sessions_->runner_threads.resize(options_.workers);
  settings_ = with_upkeep([](UpkeepStore& store) { return store.read_settings(); });
}

SlotRunner::~SlotRunner() = default;

void SlotRunner::require_firable(TimePoint slot, const char* what) const {
  const SlotGrid grid = settings_.grid();
  if (!grid.on_grid(slot)) {
    throw InvalidInput(std::string(what) + " " + format_time(slot) + " is not on the " +
                       std::to_string(settings_.slot.count()) + "s slot grid (e.g. " +
                       format_time(grid.floor(slot)) + ")");
  }
  if (slot > grid.floor(clock_.now())) {
    throw InvalidInput(std::string(what) + " " + format_time(slot) + " is later than the current slot " +
                       format_time(grid.floor(clock_.now())) + ": nothing fires early");
  }
}

SlotReport SlotRunner::drain(TimePoint slot) {
  const auto begin = std::chrono::steady_clock::now();
  std::vector<SlotReport> reports(options_.workers);
  std::vector<std::exception_ptr> errors(options_.workers);
  std::vector<std::thread> threads;
  ClaimMark mark;
  for (int w = 0; w < options_.workers; ++w) {
    threads.emplace_back([&, w] {
      std::unique_ptr<RunnerThread>& runner_thread = sessions_->runner_threads[w];
      try {
        if (!runner_thread) {
          runner_thread = std::make_unique<RunnerThread>(options_, registry_, clock_, settings_,
                                                         stores_->open_thread_store(),
                                                         [stores = stores_] { return stores->open_job_session(); });
        }
        reports[w] = runner_thread->drain(slot, mark);
      } catch (...) {
        runner_thread.reset();  // its session may be broken: the next slot reconnects
        errors[w] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  SlotReport total;
  total.slot = slot;
  for (const auto& r : reports) total.add(r);
  total.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  return total;
}

SlotReport SlotRunner::run_slot(TimePoint slot) {
  require_firable(slot, "slot");
  if (!options_.shard.owns(settings_.grid(), slot)) {
    SlotReport skipped;
    skipped.slot = slot;
    skipped.owned = false;
    return skipped;
  }
  return drain(slot);
}

SlotReport SlotRunner::sweep(TimePoint until, SweepMode mode, const std::function<void(const SlotReport&)>& progress) {
  require_firable(until, "--until");
  const auto begin = std::chrono::steady_clock::now();
  const SlotGrid grid = settings_.grid();
  SlotReport total;
  total.slot = until;
  TimePoint from = from_unix_micros(-62135596800LL * 1000000);  // 0001-01-01, within PostgreSQL's range
  while (const auto slot = with_upkeep([&](UpkeepStore& store) { return store.next_overdue_slot(from, until); })) {
    from = *slot + std::chrono::microseconds{1};
    if (!options_.shard.owns(grid, grid.floor(*slot))) continue;
    SlotReport part;
    part.slot = *slot;
    if (mode == SweepMode::run) {
      part = drain(*slot);
    } else {
      const TimePoint to = grid.floor(clock_.now()) + settings_.slot;
      while (const std::int64_t moved =
                 with_upkeep([&](UpkeepStore& store) { return store.shift_slot(*slot, to, options_.batch_size); })) {
        part.shifted += moved;
      }
    }
    total.add(part);
    if (progress) progress(part);
  }
  total.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  return total;
}

int SlotRunner::ensure_history_partitions() {
  return with_upkeep([&](UpkeepStore& store) { return store.ensure_history_partitions(clock_.now()); });
}

void SlotRunner::record_seen(TimePoint slot, long claimed) {
  with_upkeep([&](UpkeepStore& store) {
    store.record_runner_seen(options_.runner_id, options_.shard.text(), slot, claimed, clock_.now());
    return 0;
  });
}

void SlotRunner::drop_sessions() {
  for (std::unique_ptr<RunnerThread>& runner_thread : sessions_->runner_threads) runner_thread.reset();
  sessions_->upkeep.reset();
}

Micros SlotRunner::server_clock_offset(const Clock& local) {
  return with_upkeep([&](UpkeepStore& store) { return store.server_clock_offset(local); });
}

std::vector<std::string> SlotRunner::paused_classes() {
  return with_upkeep([](UpkeepStore& store) { return store.paused_classes(); });
}

std::optional<TimePoint> SlotRunner::next_lease_end(TimePoint before) {
  return with_upkeep([&](UpkeepStore& store) { return store.next_lease_end(clock_.now(), before); });
}

}  // namespace prescient
