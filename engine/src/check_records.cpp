#include "prescient/check_records.hpp"

#include <array>

#include "prescient/time_text.hpp"

namespace prescient {
namespace {

nlohmann::json optional_json(const std::optional<std::string>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

}  // namespace

bool is_known_outcome(std::string_view outcome) {
  static constexpr std::array<std::string_view, 7> kOutcomes{
      "done", "cancelled", "failed", "guard_max_checks", "guard_past", "guard_horizon", "deadline_missed"};
  for (const std::string_view known : kOutcomes) {
    if (outcome == known) return true;
  }
  return false;
}

nlohmann::json to_json(const PendingCheck& c) {
  return {{"id", c.id},
          {"job", c.job},
          {"entity", c.entity},
          {"entity_key", c.entity_key},
          {"key", optional_json(c.key)},
          {"group", optional_json(c.group)},
          {"payload", c.payload},
          {"first_check_at", format_time(c.first_check_at)},
          {"next_check_at", format_time(c.next_check_at)},
          {"check_count", c.check_count},
          {"attempts", c.attempts},
          {"last_error", optional_json(c.last_error)},
          {"enqueued_on", format_time(c.enqueued_on)},
          {"enqueued_by", c.enqueued_by}};
}

nlohmann::json to_json(const HistoryEntry& h) {
  return {{"history_id", h.history_id},
          {"id", h.id},
          {"job", h.job},
          {"entity", h.entity},
          {"entity_key", h.entity_key},
          {"key", optional_json(h.key)},
          {"group", optional_json(h.group)},
          {"payload", h.payload},
          {"first_check_at", format_time(h.first_check_at)},
          {"last_check_at", format_time(h.last_check_at)},
          {"check_count", h.check_count},
          {"attempts", h.attempts},
          {"last_error", optional_json(h.last_error)},
          {"enqueued_on", format_time(h.enqueued_on)},
          {"enqueued_by", h.enqueued_by},
          {"finished_at", format_time(h.finished_at)},
          {"finished_by", h.finished_by},
          {"outcome", h.outcome},
          {"run_micros", h.run_micros ? nlohmann::json(*h.run_micros) : nlohmann::json(nullptr)}};
}

}  // namespace prescient
