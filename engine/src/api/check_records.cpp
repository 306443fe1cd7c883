#include "prescient/check_records.hpp"

#include "prescient/time_text.hpp"

namespace prescient {
namespace {

nlohmann::json optional_json(const std::optional<std::string>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

}  // namespace

namespace {

nlohmann::json fields_json(const CheckFields& c) {
  return {{"id", c.id},
          {"job", c.job},
          {"entity_name", c.entity_name},
          {"entity_key", c.entity_key},
          {"job_key", optional_json(c.job_key)},
          {"group_key", optional_json(c.group_key)},
          {"payload", c.payload},
          {"first_check_at", format_time(c.first_check_at)},
          {"check_count", c.check_count},
          {"attempts", c.attempts},
          {"last_error", optional_json(c.last_error)},
          {"enqueued_on", format_time(c.enqueued_on)},
          {"enqueued_by", c.enqueued_by},
          {"priority", c.priority},
          {"traceparent", optional_json(c.traceparent)},
          {"tracestate", optional_json(c.tracestate)},
          {"calendar", optional_json(c.calendar)},
          {"calendar_version", c.calendar_version ? nlohmann::json(*c.calendar_version) : nlohmann::json(nullptr)},
          {"business_delay", optional_json(c.business_delay)}};
}

}  // namespace

nlohmann::json to_json(const PendingCheck& c) {
  nlohmann::json out = fields_json(c);
  out["next_check_at"] = format_time(c.next_check_at);
  return out;
}

nlohmann::json to_json(const HistoryEntry& h) {
  nlohmann::json out = fields_json(h);
  out["last_check_at"] = format_time(h.last_check_at);
  out["history_id"] = h.history_id;
  out["finished_at"] = format_time(h.finished_at);
  out["finished_by"] = h.finished_by;
  out["outcome"] = to_string(h.outcome);
  out["run_micros"] = h.run_micros ? nlohmann::json(*h.run_micros) : nlohmann::json(nullptr);
  out["result"] = h.result.value_or(nullptr);
  return out;
}

nlohmann::json to_json(const CheckRun& run) {
  return {{"id", run.id},
          {"due_at", format_time(run.due_at)},
          {"finished_at", format_time(run.finished_at)},
          {"run_micros", run.run_micros ? nlohmann::json(*run.run_micros) : nlohmann::json(nullptr)},
          {"runner", run.runner},
          {"result", run.result},
          {"next_check_at", format_time(run.next_check_at)},
          {"answered_at", run.answered_at ? nlohmann::json(format_time(*run.answered_at)) : nlohmann::json(nullptr)},
          {"check_count", run.check_count},
          {"attempts", run.attempts},
          {"error", optional_json(run.error)},
          {"run_result", run.run_result.value_or(nullptr)},
          {"calendar", optional_json(run.calendar)},
          {"calendar_version", run.calendar_version ? nlohmann::json(*run.calendar_version) : nlohmann::json(nullptr)},
          {"business_delay", optional_json(run.business_delay)}};
}

nlohmann::json to_json(const CheckTrace& trace) {
  nlohmann::json out{{"pending", trace.pending ? to_json(*trace.pending) : nlohmann::json(nullptr)},
                     {"runs", nlohmann::json::array()},
                     {"history", nlohmann::json::array()}};
  for (const auto& r : trace.runs) out["runs"].push_back(to_json(r));
  for (const auto& h : trace.history) out["history"].push_back(to_json(h));
  return out;
}

}  // namespace prescient
