// Job classes for tests that run prescient as a child process.
//   sleepy: sleeps payload.sleep_ms milliseconds, emits `slept`, done. Slow enough to kill a runner mid-slot.
//   ledger: an external effect, made outside the settlement: it records each run (check id, slot, the
//     server's time, the runner's pid) in the table `ledger` through its own autocommit session, then sleeps
//     payload.sleep_ms. A run whose settlement is lost stays in the ledger, as a real side effect would. It
//     emits one event, `ledger.ran`, which the outbox holds once its settlement commits.
//   hang: never returns in time (sleeps ten minutes). throws: throws from the job.
//   conformance: the worker drivers' payload contract (jobs/workers/conformance), run by the runner, so the
//     conformance suite compares what workers' answers become with what the runner makes of the same: it
//     records the run in conformance_ledger (language 'cpp'), sleeps payload.sleep_ms, then answers by
//     payload.answer: done (the default), next (the slot plus payload.next_seconds, default 60), at (the
//     ISO-8601 time payload.at) or error (throws payload.error, default "conformance error").
#include <soci/soci.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "prescient/plugin.hpp"
#include "prescient/time_text.hpp"

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
    return {.events = {{.type = "ledger.ran", .payload = {{"id", check.id}}}}};
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

class Conformance final : public prescient::JobExec {
 public:
  prescient::JobResult run(const prescient::Check& check, prescient::JobContext& ctx) override {
    const long long slot_us = prescient::to_unix_micros(check.slot);
    const int check_count = check.check_count;
    ctx.db() << "INSERT INTO conformance_ledger (check_id, worker, language, due_at, check_count)"
                " VALUES (:id, 'runner', 'cpp', prescient.at_us(:slot), :n)",
        soci::use(check.id), soci::use(slot_us), soci::use(check_count);
    std::this_thread::sleep_for(std::chrono::milliseconds(check.payload.value("sleep_ms", 0)));
    const std::string answer = check.payload.value("answer", "done");
    if (answer == "next") return {.next = check.slot + std::chrono::seconds(check.payload.value("next_seconds", 60))};
    if (answer == "at") return {.next = prescient::parse_time(check.payload.at("at").get<std::string>())};
    if (answer == "error") throw std::runtime_error(check.payload.value("error", "conformance error"));
    return {};
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
  registry.add("conformance", [] { return std::make_unique<Conformance>(); });
  return 0;
}
