#include <catch2/catch.hpp>

#include "builtin_jobs.hpp"
#include "prescient/errors.hpp"
#include "prescient/registry.hpp"

using namespace prescient;
using namespace prescient::jobs;

namespace {

class FixedContext final : public JobContext {
 public:
  TimePoint slot() const override { return from_unix_micros(0); }
  TimePoint now() const override { return from_unix_micros(0); }
  std::chrono::milliseconds timeout() const override { return std::chrono::seconds{30}; }
  std::chrono::seconds slot_resolution() const override { return std::chrono::seconds{60}; }
  std::chrono::seconds max_horizon() const override { return std::chrono::days{365}; }
  soci::session& db() override { throw std::logic_error("no database in unit tests"); }
  void write(std::string, std::vector<std::optional<std::string>>) override {}
};

}  // namespace

TEST_CASE("emit publishes the payload as an event and finishes the check") {
  Registry registry;
  register_builtin_jobs(registry);
  FixedContext ctx;
  Check check;
  check.payload = {{"type", "order.late"}, {"order", 42}};
  const JobResult typed = registry.create("emit")->run(check, ctx);
  CHECK_FALSE(typed.next.has_value());
  REQUIRE(typed.events.size() == 1);
  CHECK(typed.events[0].type == "order.late");
  CHECK(typed.events[0].payload == check.payload);
  check.payload = {{"type", 7}};
  CHECK(registry.create("emit")->run(check, ctx).events[0].type == "emit");
}

TEST_CASE("built-in classes are registered and noop finishes a check") {
  Registry registry;
  register_builtin_jobs(registry);
  REQUIRE(registry.contains("noop"));
  CHECK(registry.origin_of("noop") == "built-in");
  FixedContext ctx;
  const JobResult result = registry.create("noop")->run(Check{}, ctx);
  CHECK_FALSE(result.next.has_value());
  CHECK(result.events.empty());
}

TEST_CASE("an unknown class is refused with the list of known ones") {
  Registry registry;
  register_builtin_jobs(registry);
  CHECK_NOTHROW(registry.require("noop"));
  CHECK_THROWS_AS(registry.require("nope"), InvalidInput);
  CHECK_THROWS_WITH(registry.require("nope"), Catch::Contains("'nope'") && Catch::Contains("(known: command, cron, emit, http, noop, sql)"));
}

TEST_CASE("duplicate and malformed class names are refused, naming where they came from") {
  Registry registry;
  registry.add("noop", [] { return nullptr; });
  CHECK_THROWS_WITH(registry.add("noop", [] { return nullptr; }, "plugins/libx.so"),
                    Catch::Contains("plugins/libx.so") && Catch::Contains("already registered by built-in"));
  CHECK(registry.origin_of("noop") == "built-in");
  for (const char* bad : {"", "Noop", "1job", "has space", "semi;colon", "quote'", "_lead"}) {
    INFO(bad);
    CHECK_THROWS_AS(registry.add(bad, [] { return nullptr; }), InvalidInput);
  }
  CHECK_THROWS_AS(registry.add(std::string(65, 'a'), [] { return nullptr; }), InvalidInput);
  CHECK_NOTHROW(registry.add("order_unshipped.v2-x", [] { return nullptr; }));
  CHECK(registry.names() == std::vector<std::string>{"noop", "order_unshipped.v2-x"});
}

TEST_CASE("run_group runs the checks one by one, in order, by default") {
  class Recorder final : public JobExec {
   public:
    std::vector<std::int64_t> seen;
    JobResult run(const Check& check, JobContext&) override {
      seen.push_back(check.id);
      return {};
    }
  };
  Recorder recorder;
  FixedContext ctx;
  std::vector<Check> checks(3);
  for (int i = 0; i < 3; ++i) checks[i].id = 10 + i;
  CHECK(recorder.run_group(checks, ctx).size() == 3);
  CHECK(recorder.seen == std::vector<std::int64_t>{10, 11, 12});
}
