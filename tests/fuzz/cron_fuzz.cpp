// CronSpec: the spec on the first line, an optional IANA zone on the second. An accepted spec is asked
// for its next firings from a fixed instant, in UTC and in the zone.
#include "fuzz_support.hpp"
#include "prescient/cron_spec.hpp"
#include "prescient/time_text.hpp"
#include "prescient/time_zone.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input = prescient::fuzz::text_of(data, size);
  const std::size_t newline = input.find('\n');
  const std::string_view spec_text = input.substr(0, newline);
  const std::string zone_name(newline == std::string_view::npos ? "UTC" : input.substr(newline + 1));
  prescient::fuzz::refuse_or_accept([&] {
    const auto spec = prescient::CronSpec::parse(spec_text);
    const auto& zone = prescient::find_time_zone(zone_name);
    const auto anchor = prescient::parse_time("2026-03-08T01:30:00Z");
    auto after = anchor;
    for (int i = 0; i < 4; ++i) {
      const auto next = spec.next(after, zone, anchor);
      if (!next) break;
      after = *next;
    }
  });
  return 0;
}
