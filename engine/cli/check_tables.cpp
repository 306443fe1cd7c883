#include "check_tables.hpp"

#include "check_options.hpp"
#include "prescient/time_text.hpp"

namespace prescient::cli {

void print_pending_table(const std::vector<PendingCheck>& checks) {
  std::vector<std::vector<std::string>> rows;
  for (const PendingCheck& c : checks) {
    rows.push_back({std::to_string(c.id), format_time(c.next_check_at), c.job, c.entity, c.entity_key, or_dash(c.key),
                    or_dash(c.group), std::to_string(c.check_count), std::to_string(c.attempts), c.enqueued_by});
  }
  print_table({"ID", "NEXT_CHECK_AT", "JOB", "ENTITY", "ENTITY_KEY", "KEY", "GROUP", "CHECKS", "ATTEMPTS", "BY"}, rows);
}

void print_history_table(const std::vector<HistoryEntry>& entries) {
  std::vector<std::vector<std::string>> rows;
  for (const HistoryEntry& h : entries) {
    rows.push_back({format_time(h.finished_at), h.outcome, std::to_string(h.id), h.job, h.entity, h.entity_key,
                    or_dash(h.key), format_time(h.last_check_at), std::to_string(h.check_count),
                    std::to_string(h.attempts), h.finished_by, or_dash(h.last_error)});
  }
  print_table({"FINISHED_AT", "OUTCOME", "ID", "JOB", "ENTITY", "ENTITY_KEY", "KEY", "LAST_CHECK_AT", "CHECKS",
               "ATTEMPTS", "BY", "LAST_ERROR"},
              rows);
}

}  // namespace prescient::cli
