#include <catch2/catch.hpp>

#include <thread>
#include <vector>

#include "prescient/clock.hpp"
#include "prescient/time_text.hpp"

using namespace prescient;

TEST_CASE("a manual clock moves only when told") {
  ManualClock clock(parse_time("2026-11-21T10:05:00Z"));
  CHECK(format_time(clock.now()) == "2026-11-21T10:05:00Z");
  clock.advance(std::chrono::hours{3});
  CHECK(format_time(clock.now()) == "2026-11-21T13:05:00Z");
  clock.set(parse_time("2026-11-21T09:00:00Z"));  // backwards too: clock faults are tested with this
  CHECK(format_time(clock.now()) == "2026-11-21T09:00:00Z");
}

TEST_CASE("a manual clock can be advanced from several threads") {
  ManualClock clock(from_unix_micros(0));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) clock.advance(Micros{1});
    });
  }
  for (auto& t : threads) t.join();
  CHECK(to_unix_micros(clock.now()) == 4000);
}

TEST_CASE("the system clock is close to the real time") {
  const SystemClock clock;
  const auto real = std::chrono::system_clock::now();
  CHECK(std::chrono::abs(clock.now() - std::chrono::time_point_cast<Micros>(real)) < std::chrono::seconds{5});
}
