#pragma once
// Store: every SQL statement prescient runs at run time lives behind this class (the schema itself
// lives in sql/). Time always comes in as a parameter; the SQL never asks the server for now().
#include <vector>

#include "prescient/check_records.hpp"
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

  // Pending checks matching the filter, soonest first.
  std::vector<PendingCheck> pending(const PendingFilter& filter);
  // History rows matching the filter: newest first, or oldest first for a trace.
  std::vector<HistoryEntry> history(const HistoryFilter& filter, bool oldest_first = false);

 private:
  soci::session& db_;
};

}  // namespace prescient
