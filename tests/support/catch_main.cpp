#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <spdlog/spdlog.h>

int main(int argc, char* argv[]) {
  // The library logs through spdlog's default logger; in tests only warnings and errors matter.
  spdlog::set_level(spdlog::level::warn);
  return Catch::Session().run(argc, argv);
}
