#pragma once
// Database sessions for the dashboard's request threads: taken for one request and given back, at most
// `size` open at once (a request waits for one). A session whose request failed on the database is
// closed instead of given back, so a lost connection is not handed out again; when the connection or the
// server was lost, the idle sessions are closed too (they went to the same server: after a failover each
// would fail one more request).
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace soci {
class session;
}

namespace prescient::web {

class SessionPool {
 public:
  SessionPool(std::string database_url, int size);
  ~SessionPool();

  class Lease {
   public:
    Lease(SessionPool& pool, std::unique_ptr<soci::session> session);
    Lease(Lease&&) = default;
    ~Lease();
    soci::session& operator*() const { return *session_; }
    // The session is not given back (its connection may be broken).
    void discard() { discard_ = true; }

   private:
    SessionPool* pool_;
    std::unique_ptr<soci::session> session_;
    bool discard_ = false;
  };

  // Connects when no idle session is left and fewer than `size` are out.
  Lease take();
  // Closes every idle session: the server they went to is gone. Those out close when they fail.
  void drop_idle();

 private:
  void give_back(std::unique_ptr<soci::session> session, bool discard);

  const std::string database_url_;
  const int size_;
  std::mutex mutex_;
  std::condition_variable freed_;
  std::vector<std::unique_ptr<soci::session>> idle_;
  int out_ = 0;
};

}  // namespace prescient::web
