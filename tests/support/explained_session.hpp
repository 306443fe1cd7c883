// A session whose statements' plans the test reads: auto_explain reports each statement's plan, nested
// statements too (those a function runs), as a notice to the session, and the notices are kept. What a
// plan looks like is how a test sees that the planner inlines a rule, or looks each check up by its key.
#pragma once

#include <libpq-fe.h>

#include <memory>
#include <string>

namespace prescient::testing {

class ExplainedSession {
 public:
  // `analyze`: the plans carry what each node did (its rows, those a filter or join threw away).
  ExplainedSession(const std::string& url, bool analyze);
  // Runs `sql`, which must succeed; answers the first row's first value ("" when it has none).
  std::string run(const std::string& sql);
  // Every plan reported so far, in order.
  const std::string& plans() const { return notices_; }

 private:
  std::unique_ptr<PGconn, decltype(&PQfinish)> conn_;
  std::string notices_;
};

}  // namespace prescient::testing
