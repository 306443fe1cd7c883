#include <soci/soci.h>
#include <spdlog/spdlog.h>

#include "prescient/database.hpp"
#include "prescient/duration.hpp"
#include "prescient/queue_stats.hpp"

namespace prescient {

FiguresRefresher::FiguresRefresher(std::string database_url, const Clock& clock, Micros max_age)
    : database_url_(std::move(database_url)), clock_(clock), max_age_(max_age), thread_([this] { run(); }) {}

FiguresRefresher::~FiguresRefresher() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void FiguresRefresher::run() {
  std::unique_ptr<soci::session> db;
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    try {
      if (!db) db = connect(database_url_);
      const auto started = std::chrono::steady_clock::now();
      if (refresh_queue_figures(*db, clock_.now(), max_age_)) {
        spdlog::debug("counted the queue figures in {} ms", std::chrono::duration_cast<std::chrono::milliseconds>(
                                                                 std::chrono::steady_clock::now() - started)
                                                                 .count());
      }
    } catch (const std::exception& e) {
      db.reset();  // connect again at the next turn
      spdlog::warn("cannot count the queue figures, trying again in {}: {}",
                   format_duration(std::chrono::duration_cast<std::chrono::seconds>(max_age_ / 4)), e.what());
    }
    lock.lock();
    wake_.wait_for(lock, max_age_ / 4, [this] { return stopping_; });
  }
}

}  // namespace prescient
