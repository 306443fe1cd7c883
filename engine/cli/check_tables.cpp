#include "check_tables.hpp"

#include "check_options.hpp"
#include "prescient/time_text.hpp"

namespace prescient::cli {

void print_pending_table(const std::vector<PendingCheck>& checks) {
  std::vector<std::vector<std::string>> rows;
  for (const PendingCheck& c : checks) {
    rows.push_back({std::to_string(c.id), format_time(c.next_check_at), c.job, c.entity_name, c.entity_key,
                    or_dash(c.job_key), or_dash(c.group_key), std::to_string(c.check_count), std::to_string(c.attempts),
                    c.enqueued_by, std::to_string(c.priority)});
  }
  print_table({"ID", "NEXT_CHECK_AT", "JOB", "ENTITY_NAME", "ENTITY_KEY", "JOB_KEY", "GROUP_KEY", "CHECK_COUNT",
               "ATTEMPTS", "ENQUEUED_BY", "PRIORITY"},
              rows);
}

void print_history_table(const std::vector<HistoryEntry>& entries) {
  std::vector<std::vector<std::string>> rows;
  for (const HistoryEntry& h : entries) {
    rows.push_back({format_time(h.finished_at), std::string(to_string(h.outcome)), std::to_string(h.id), h.job, h.entity_name, h.entity_key,
                    or_dash(h.job_key), format_time(h.last_check_at), std::to_string(h.check_count),
                    std::to_string(h.attempts), h.finished_by, or_dash(h.last_error)});
  }
  print_table({"FINISHED_AT", "OUTCOME", "ID", "JOB", "ENTITY_NAME", "ENTITY_KEY", "JOB_KEY", "LAST_CHECK_AT",
               "CHECK_COUNT", "ATTEMPTS", "FINISHED_BY", "LAST_ERROR"},
              rows);
}

}  // namespace prescient::cli
