#include "runner/batch_executor.hpp"

#include <utility>

#include <soci/soci.h>

#include "runner/abandoned_jobs.hpp"
#include "prescient/duration.hpp"
#include "prescient/log.hpp"
#include "core/text_rules.hpp"

namespace prescient::runner {

using namespace prescient::core;

struct BatchExecutor::State {
  std::mutex mutex;
  std::condition_variable work_ready, progress;
  bool stop = false;       // the owner is gone (normal end, or abandoned after a timeout)
  bool has_work = false;
  bool finished = false;
  std::size_t current = 0;  // the unit running now
  std::chrono::steady_clock::time_point started;
  // The batch, held here too so an abandoned thread never reads memory its owner freed.
  SharedChecks checks;
  SharedUnits units;
  std::vector<UnitResult> results;
  TimePoint slot;
  std::chrono::seconds resolution{60};
  std::chrono::seconds max_horizon{365 * 86400};
  std::chrono::steady_clock::time_point deadline;  // no unit but the first starts after it
  // The runner's clock while the executor is in use; once it is abandoned, a clock of its own: the
  // runner (and its clock) may be gone by the time the stuck job asks for the time. Read under `mutex`.
  const Clock* clock = nullptr;
  std::string abandoned_job;  // the class of the job it was abandoned in; empty while in use
  // Jobs' own session: lives with the state, so an abandoned job keeps it and nobody else uses it.
  JobSessionOpener open_job_session;
  std::unique_ptr<soci::session> job_db;
};

namespace {

// What an abandoned thread reads the time from: never destroyed, so it outlives every runner.
const Clock& detached_clock() {
  static const SystemClock* const clock = new SystemClock;
  return *clock;
}

class Context final : public JobContext {
 public:
  Context(BatchExecutor::State& state, const JobSessionOpener& open_session, std::unique_ptr<soci::session>& db)
      : slot_(state.slot), resolution_(state.resolution), max_horizon_(state.max_horizon), state_(state),
        open_session_(open_session), db_(db) {}
  TimePoint slot() const override { return slot_; }
  std::chrono::seconds slot_resolution() const override { return resolution_; }
  std::chrono::seconds max_horizon() const override { return max_horizon_; }
  TimePoint now() const override {
    const std::lock_guard lock(state_.mutex);
    return state_.clock->now();
  }
  std::chrono::milliseconds timeout() const override { return timeout_; }
  void set_timeout(std::chrono::milliseconds timeout) { timeout_ = timeout; }
  soci::session& db() override {
    if (!db_) db_ = open_session_();
    return *db_;
  }
  void write(std::string sql, std::vector<std::optional<std::string>> params) override {
    writes_.push_back({std::move(sql), std::move(params)});
  }
  std::vector<BufferedWrite> take_writes() { return std::exchange(writes_, {}); }

 private:
  TimePoint slot_;
  std::chrono::seconds resolution_, max_horizon_;
  BatchExecutor::State& state_;
  const JobSessionOpener& open_session_;
  std::unique_ptr<soci::session>& db_;
  std::chrono::milliseconds timeout_{30000};
  std::vector<BufferedWrite> writes_;
};

UnitResult run_unit(const std::vector<Check>& checks, const WorkUnit& unit, Context& ctx) {
  ctx.take_writes();  // nothing carries over from an earlier unit
  UnitResult out;
  out.ran = true;
  const auto begin = std::chrono::steady_clock::now();
  try {
    if (!unit.exec) throw std::runtime_error(unit.refusal);
    const std::span<const Check> group(checks.data() + unit.first, unit.count);
    if (unit.batched) {
      std::vector<BatchAnswer> answers = unit.exec->run_batch(group, ctx);
      if (answers.size() != unit.count) {
        throw std::runtime_error("run_batch of '" + unit.job + "' returned " + std::to_string(answers.size()) +
                                 " answers for " + std::to_string(unit.count) + " checks");
      }
      for (BatchAnswer& answer : answers) {
        out.results.push_back(std::move(answer.result));
        if (answer.failure) {
          std::string error = storable_text(*answer.failure, kMaxErrorBytes);
          out.check_failures.emplace_back(error.empty() ? "the job failed without a message" : std::move(error));
        } else {
          out.check_failures.emplace_back();
        }
      }
    } else if (unit.grouped) {
      out.results = unit.exec->run_group(group, ctx);
      if (out.results.size() != unit.count) {
        throw std::runtime_error("run_group of '" + unit.job + "' returned " + std::to_string(out.results.size()) +
                                 " results for " + std::to_string(unit.count) + " checks");
      }
    } else {
      const LogTrace trace(group.front().traceparent);  // what the job logs belongs to its run's trace
      out.results.push_back(unit.exec->run(group.front(), ctx));
    }
  } catch (const std::exception& e) {
    out.failed = true;
    // The job boundary: its message reaches logs and the database, so it must be storable and bounded.
    const char* what = e.what();
    out.error = storable_text(what != nullptr ? what : "", kMaxErrorBytes);
    if (out.error.empty()) out.error = "the job threw an exception without a message";
  } catch (...) {
    out.failed = true;
    out.error = "the job threw a non-standard exception";
  }
  out.micros = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - begin).count();
  // A failed run's writes are dropped with it.
  if (!out.failed) out.writes = ctx.take_writes();
  return out;
}

}  // namespace

BatchExecutor::BatchExecutor(JobSessionOpener open_job_session) : state_(std::make_shared<State>()) {
  state_->open_job_session = std::move(open_job_session);
  thread_ = std::thread(&BatchExecutor::loop, this, state_);
}

BatchExecutor::~BatchExecutor() {
  {
    const std::lock_guard lock(state_->mutex);
    state_->stop = true;
  }
  state_->work_ready.notify_all();
  if (timed_out_) thread_.detach();
  else thread_.join();
}

// Runs on the executor's thread; touches only the shared state, never `this` (which may be gone).
void BatchExecutor::loop(std::shared_ptr<State> state) {
  std::unique_lock lock(state->mutex);
  while (true) {
    state->work_ready.wait(lock, [&] { return state->stop || state->has_work; });
    if (state->stop) return;
    state->has_work = false;
    Context ctx(*state, state->open_job_session, state->job_db);
    const SharedChecks checks = state->checks;
    const SharedUnits units = state->units;
    for (std::size_t i = 0; i < units->size(); ++i) {
      // Past the batch's deadline no further unit starts: the rest stay unrun, and the runner releases
      // their rows at its commit instead of holding them while more jobs run.
      if (i > 0 && std::chrono::steady_clock::now() >= state->deadline) break;
      state->current = i;
      state->started = std::chrono::steady_clock::now();
      ctx.set_timeout((*units)[i].timeout);
      lock.unlock();
      UnitResult result = run_unit(*checks, (*units)[i], ctx);
      lock.lock();
      if (state->stop) {
        // Abandoned while the job ran: nobody reads this any more. The job has returned at last.
        if (!state->abandoned_job.empty()) AbandonedJobs::process().remove(state->abandoned_job);
        return;
      }
      state->results[i] = std::move(result);
    }
    state->finished = true;
    state->progress.notify_all();
  }
}

std::vector<UnitResult> BatchExecutor::run(SharedChecks checks, SharedUnits units, TimePoint slot, const Clock& clock,
                                           std::chrono::seconds resolution, std::chrono::seconds max_horizon,
                                           std::chrono::steady_clock::time_point deadline) {
  if (units->empty()) return {};
  std::unique_lock lock(state_->mutex);
  state_->results.assign(units->size(), UnitResult{});
  state_->checks = std::move(checks);
  state_->units = std::move(units);
  state_->slot = slot;
  state_->resolution = resolution;
  state_->max_horizon = max_horizon;
  state_->clock = &clock;
  state_->deadline = deadline;
  state_->current = 0;
  state_->started = std::chrono::steady_clock::now();
  state_->finished = false;
  state_->has_work = true;
  state_->work_ready.notify_all();
  while (!state_->finished) {
    const std::size_t unit = state_->current;
    const auto deadline = state_->started + (*state_->units)[unit].timeout + kTimeoutGrace;
    // No notification per unit: at each deadline we look whether the executor has moved on.
    if (state_->progress.wait_until(lock, deadline, [&] { return state_->finished || state_->current != unit; })) {
      continue;
    }
    // Abandon the thread inside the job: marked under the lock, so when the job returns the thread
    // sees `stop` before it could write a result.
    timed_out_ = true;
    state_->stop = true;
    state_->clock = &detached_clock();
    state_->abandoned_job = (*state_->units)[unit].job;
    AbandonedJobs::process().add(state_->abandoned_job);
    std::vector<UnitResult> results = std::move(state_->results);
    const auto timeout = (*state_->units)[unit].timeout;
    results[unit] = UnitResult{
        .ran = true,
        .failed = true,
        .error = "did not return within its timeout of " +
                 (timeout.count() % 1000 == 0 ? format_duration(std::chrono::duration_cast<std::chrono::seconds>(timeout))
                                              : std::to_string(timeout.count()) + "ms")};
    return results;
  }
  return std::move(state_->results);
}

}  // namespace prescient::runner
