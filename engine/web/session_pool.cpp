#include "session_pool.hpp"

#include <soci/soci.h>

#include "prescient/database.hpp"

namespace prescient::web {

SessionPool::SessionPool(std::string database_url, int size) : database_url_(std::move(database_url)), size_(size) {}

SessionPool::~SessionPool() = default;

SessionPool::Lease::Lease(SessionPool& pool, std::unique_ptr<soci::session> session)
    : pool_(&pool), session_(std::move(session)) {}

SessionPool::Lease::~Lease() {
  if (session_) pool_->give_back(std::move(session_), discard_);
}

SessionPool::Lease SessionPool::take() {
  std::unique_lock lock(mutex_);
  freed_.wait(lock, [this] { return !idle_.empty() || out_ < size_; });
  ++out_;
  if (!idle_.empty()) {
    auto session = std::move(idle_.back());
    idle_.pop_back();
    return Lease(*this, std::move(session));
  }
  lock.unlock();
  try {
    return Lease(*this, connect(database_url_));
  } catch (...) {
    lock.lock();
    --out_;
    freed_.notify_one();
    throw;
  }
}

void SessionPool::drop_idle() {
  std::vector<std::unique_ptr<soci::session>> dropped;
  {
    const std::lock_guard lock(mutex_);
    dropped.swap(idle_);
  }
  // They close here, outside the lock.
}

void SessionPool::give_back(std::unique_ptr<soci::session> session, bool discard) {
  {
    const std::lock_guard lock(mutex_);
    --out_;
    if (!discard) idle_.push_back(std::move(session));
  }
  freed_.notify_one();
  // A discarded session closes here, outside the lock.
}

}  // namespace prescient::web
