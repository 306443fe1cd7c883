// Job classes for tests that run prescient as a child process.
//   sleepy: sleeps payload.sleep_ms milliseconds, emits `slept`, done. Slow enough to kill a runner mid-slot.
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

}  // namespace

PRESCIENT_PLUGIN_ABI_EXPORT

extern "C" int prescient_register(prescient::Registry& registry) {
  registry.add("sleepy", [] { return std::make_unique<Sleepy>(); });
  return 0;
}
