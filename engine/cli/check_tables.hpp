#pragma once
// Pending checks and history rows as text tables, for list, show and history.
#include <vector>

#include "prescient/check_records.hpp"

namespace prescient::cli {

void print_pending_table(const std::vector<PendingCheck>& checks);
void print_history_table(const std::vector<HistoryEntry>& entries);

}  // namespace prescient::cli
