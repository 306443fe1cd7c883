#include "ops/turns.hpp"

#include <soci/soci.h>
#include <spdlog/spdlog.h>

#include "prescient/database.hpp"
#include "prescient/duration.hpp"

namespace prescient::ops {

Turns::Turns(std::string database_url, std::chrono::milliseconds every, std::string what,
             std::function<void(soci::session&)> turn)
    : database_url_(std::move(database_url)),
      every_(every),
      what_(std::move(what)),
      turn_(std::move(turn)),
      thread_([this] { run(); }) {}

Turns::~Turns() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Turns::run() {
  std::unique_ptr<soci::session> db;
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    try {
      if (!db) db = connect(database_url_);
      turn_(*db);
    } catch (const std::exception& e) {
      db.reset();  // connect again at the next turn
      spdlog::warn("{}, trying again in {}: {}", what_,
                   format_duration(std::chrono::duration_cast<std::chrono::seconds>(every_)), e.what());
    }
    lock.lock();
    wake_.wait_for(lock, every_, [this] { return stopping_; });
  }
}

}  // namespace prescient::ops
