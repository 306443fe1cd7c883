// `hostile`: a job class, built only for tests, whose checks return every kind of bad result, chosen by
// payload.do. Each kind is what a buggy or hostile plugin could hand the runner; none may take the
// batch, the slot or the daemon down. The outcome each kind must end in is in tests/support/hostile.hpp.
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include "prescient/plugin.hpp"
#include "prescient/time_text.hpp"

namespace {

using prescient::Event;
using prescient::JobResult;

class Hostile final : public prescient::JobExec {
 public:
  JobResult run(const prescient::Check& check, prescient::JobContext& ctx) override {
    const std::string what = check.payload.value("do", "");
    const std::string id = std::to_string(check.id);
    if (what == "error_bad_utf8") throw std::runtime_error("upstream said \xff\xfe");
    if (what == "error_huge") throw std::runtime_error("huge: " + std::string(10 * 1024 * 1024, 'x'));
    if (what == "throw_int") throw 42;
    if (what == "next_9999") return {.next = prescient::parse_time("9999-12-31T00:00:00Z")};
    if (what == "next_1960") return {.next = prescient::parse_time("1960-01-01T00:00:00Z")};
    if (what == "event_bad_utf8") {
      return {.events = {{.type = "bad\xff type", .payload = {{"fine", true}}, .source = "src\xfe"}}};
    }
    if (what == "event_nul_type") return {.events = {{.type = std::string("nul\0type", 8)}}};
    if (what == "event_nul_payload") {
      return {.events = {{.type = "t", .payload = {{"s", std::string("a\0b", 3)}}}}};
    }
    if (what == "event_bad_id") return {.events = {{.type = "t", .id = "id\xff"}}};
    if (what == "event_dup_ids") {
      return {.events = {{.type = "one", .id = "dup-" + id}, {.type = "two", .id = "dup-" + id}}};
    }
    if (what == "event_far_time") {
      return {.events = {{.type = "t", .occurred_at = prescient::from_unix_micros(20000LL * 366 * 86400 * 1000000)}}};
    }
    if (what == "events_too_many") return {.events = std::vector<Event>(10001, Event{.type = "t"})};
    if (what == "write_violates") {
      // prescient.event refuses an empty id (a check constraint): the write fails at settle time.
      ctx.write("INSERT INTO prescient.event (id, type, source, occurred_at, emitted_at) VALUES ('', 't', $1, now(), now())",
                {id});
      return {};
    }
    if (what == "write_nul") {
      ctx.write("SELECT $1::text", {std::string("a\0b", 3)});
      return {};
    }
    if (what == "hang") {
      // Past its timeout and the runner's grace, then it returns: its thread is abandoned meanwhile.
      std::this_thread::sleep_for(ctx.timeout() + std::chrono::seconds{3});
      return {};
    }
    throw std::runtime_error("hostile: unknown payload.do '" + what + "'");
  }
};

}  // namespace

PRESCIENT_PLUGIN_ABI_EXPORT

extern "C" int prescient_register(prescient::Registry& registry) {
  registry.add("hostile", [] { return std::make_unique<Hostile>(); });
  return 0;
}
