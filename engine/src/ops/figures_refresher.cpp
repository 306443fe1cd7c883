#include <soci/soci.h>
#include <spdlog/spdlog.h>

#include "ops/turns.hpp"
#include "prescient/queue_stats.hpp"

namespace prescient {

FiguresRefresher::FiguresRefresher(std::string database_url, const Clock& clock, Micros max_age)
    : turns_(std::make_unique<ops::Turns>(
          std::move(database_url), std::chrono::duration_cast<std::chrono::milliseconds>(max_age / 4),
          "cannot count the queue figures", [&clock, max_age](soci::session& db) {
            const auto started = std::chrono::steady_clock::now();
            if (refresh_queue_figures(db, clock.now(), max_age)) {
              spdlog::debug("counted the queue figures in {} ms", std::chrono::duration_cast<std::chrono::milliseconds>(
                                                                       std::chrono::steady_clock::now() - started)
                                                                       .count());
            }
          })) {}

FiguresRefresher::~FiguresRefresher() = default;

}  // namespace prescient
