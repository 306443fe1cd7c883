// Job classes for tests that run prescient as a child process.
//   sleepy: sleeps payload.sleep_ms milliseconds, emits `slept`, done. Slow enough to kill a runner mid-slot.
//   ledger: an external effect, made outside the settlement: it records each run (check id, slot, the
//     server's time, the runner's pid) in the table `ledger` through its own autocommit session, then sleeps
//     payload.sleep_ms. A run whose settlement is lost stays in the ledger, as a real side effect would.
//   hang: never returns in time (sleeps ten minutes). throws: throws from the job.
#include <soci/soci.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "prescient/plugin.hpp"

namespace {

class Sleepy final : public prescient::JobExec {
 public:
  prescient::JobResult run(const prescient::Check& check, prescient::JobContext&) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(check.payload.value("sleep_ms", 1)));
    return {.next = std::nullopt, .events = {{.type = "slept", .payload = {{"id", check.id}}}}};
  }
};

// Records each run in the ledger table (tests/reliability/daemons.hpp). The slow one is long-running:
// claimed with a written lease and run outside the claim's transaction.
class Ledger final : public prescient::JobExec {
 public:
  explicit Ledger(bool long_running) : long_running_(long_running) {}
  prescient::JobPolicy policy() const override { return {.long_running = long_running_}; }
  prescient::JobResult run(const prescient::Check& check, prescient::JobContext& ctx) override {
    const long long slot_us = prescient::to_unix_micros(check.slot);
    const int runner_pid = ::getpid();
    ctx.db() << "INSERT INTO ledger (check_id, slot, ran_at, runner_pid)"
                " VALUES (:id, prescient.at_us(:slot), clock_timestamp(), :pid)",
        soci::use(check.id), soci::use(slot_us), soci::use(runner_pid);
    std::this_thread::sleep_for(std::chrono::milliseconds(check.payload.value("sleep_ms", 0)));
    return {};
  }

 private:
  bool long_running_;
};

class Hang final : public prescient::JobExec {
 public:
  prescient::JobResult run(const prescient::Check&, prescient::JobContext&) override {
    std::this_thread::sleep_for(std::chrono::minutes(10));
    return {};
  }
};

class Throws final : public prescient::JobExec {
 public:
  prescient::JobResult run(const prescient::Check& check, prescient::JobContext&) override {
    throw std::runtime_error("check " + std::to_string(check.id) + " exploded");
  }
};

}  // namespace

PRESCIENT_PLUGIN_ABI_EXPORT

extern "C" int prescient_register(prescient::Registry& registry) {
  registry.add("sleepy", [] { return std::make_unique<Sleepy>(); });
  registry.add("ledger", [] { return std::make_unique<Ledger>(false); });
  registry.add("slow_ledger", [] { return std::make_unique<Ledger>(true); });
  registry.add("hang", [] { return std::make_unique<Hang>(); });
  registry.add("throws", [] { return std::make_unique<Throws>(); });
  return 0;
}
