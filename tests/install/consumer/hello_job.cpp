// A job class outside prescient's tree, built against the installed headers.
#include "prescient/plugin.hpp"

namespace {

class Hello final : public prescient::JobExec {
 public:
  prescient::JobResult run(const prescient::Check&, prescient::JobContext&) override {
    return {.events = {{.type = "hello", .payload = {{"from", "an installed plugin"}}}}};
  }
};

}  // namespace

PRESCIENT_PLUGIN_ABI_EXPORT

extern "C" int prescient_register(prescient::Registry& registry) {
  registry.add("hello", [] { return std::make_unique<Hello>(); });
  return 0;
}
