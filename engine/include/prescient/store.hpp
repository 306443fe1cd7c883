#pragma once
// Store: every SQL statement prescient runs at run time lives behind this class (the schema itself
// lives in sql/). Time always comes in as a parameter; the SQL never asks the server for now().
#include "prescient/settings.hpp"

namespace soci {
class session;
}

namespace prescient {

class Store {
 public:
  // REQUIRES: db stays open for the Store's lifetime and is used by one thread at a time.
  explicit Store(soci::session& db) : db_(db) {}

  Settings settings();

 private:
  soci::session& db_;
};

}  // namespace prescient
