#include <nlohmann/json.hpp>
#include <soci/soci.h>

#include <algorithm>
#include <iostream>
#include <set>

#include "check_options.hpp"
#include "check_tables.hpp"
#include "core/text_rules.hpp"
#include "prescient/errors.hpp"
#include "prescient/checks.hpp"
#include "prescient/flow_limits.hpp"
#include "prescient/time_text.hpp"

namespace prescient::cli {
using core::one_line;

namespace {

std::string took(const std::optional<std::int64_t>& micros) {
  if (!micros) return "";
  return " in " + std::to_string(*micros / 1000) + "." + std::to_string(*micros % 1000 / 100) + " ms";
}

// What computed a time when a calendar did, an enqueue's or an answer's: "calendar support-eu version 3: 4h of
// open time".
std::string business_timing(const std::string& calendar, std::optional<int> version,
                            const std::optional<std::string>& delay) {
  return "calendar " + calendar + " version " + (version ? std::to_string(*version) : "-") + ": " +
         (delay ? *delay + " of open time" : std::string("at its time or the next opening"));
}
std::string business_timing(const CheckFields& c) {
  return business_timing(*c.calendar, c.calendar_version, c.business_delay);
}

// The check's life, oldest first: the calendar that timed it (if one did), each run that left it pending, each
// deferral by a flow limit, and how it ended (its history rows), one line each.
void print_timeline(const CheckTrace& trace, const std::vector<FlowDeferral>& deferrals) {
  std::vector<std::pair<TimePoint, std::string>> lines;
  std::set<std::int64_t> timed_ids;  // once a check: a retried one has several history rows
  const auto timed = [&](const CheckFields& c) {
    if (c.calendar && timed_ids.insert(c.id).second) {
      lines.emplace_back(c.enqueued_on, "check " + std::to_string(c.id) + " timed by " + business_timing(c));
    }
  };
  if (trace.pending) timed(*trace.pending);
  for (const HistoryEntry& h : trace.history) timed(h);
  for (const CheckRun& r : trace.runs) {
    std::string line = "check " + std::to_string(r.id) + " ran for " + format_time(r.due_at) + " on " + r.runner +
                       took(r.run_micros) + ": " + r.result + " to " + format_time(r.next_check_at);
    if (r.answered_at) line += " (answered " + format_time(*r.answered_at) + ")";
    if (r.calendar) line += " in business time, " + business_timing(*r.calendar, r.calendar_version, r.business_delay);
    line += ", checks " + std::to_string(r.check_count) + ", attempts " + std::to_string(r.attempts);
    if (r.error) line += ": " + one_line(*r.error);
    if (r.run_result) line += ", result " + r.run_result->dump();
    lines.emplace_back(r.finished_at, std::move(line));
  }
  for (const FlowDeferral& d : deferrals) {
    lines.emplace_back(d.deferred_at, "check " + std::to_string(d.check_id) + " deferred by limit " + d.limit_name +
                                          " (" + d.key_value + ") until " + format_time(d.until));
  }
  for (const HistoryEntry& h : trace.history) {
    std::string line = "check " + std::to_string(h.id) + " ended " + std::string(to_string(h.outcome)) + " by " +
                       h.finished_by + took(h.run_micros) + ", checks " + std::to_string(h.check_count) +
                       ", attempts " + std::to_string(h.attempts);
    if (h.last_error) line += ": " + one_line(*h.last_error);
    if (h.result) line += ", result " + h.result->dump();
    lines.emplace_back(h.finished_at, std::move(line));
  }
  std::stable_sort(lines.begin(), lines.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::cout << "timeline: " << lines.size() << " entr" << (lines.size() == 1 ? "y" : "ies") << ", oldest first\n";
  for (const auto& [at, line] : lines) std::cout << "  " << format_time(at) << "  " << line << "\n";
}

}  // namespace


Command show_command() {
  return {
      .name = "show",
      .summary = "Show one check's whole trace: its pending row, if any, and its timeline, oldest first: each run "
                 "that left it pending (when, on which runner, how long, what it answered), each time a flow limit "
                 "deferred it, and how it ended (its history rows).",
      .usage = "show (--job-key KEY | --id N) [--read-db URL] [--json]",
      .add_options =
          [](po::options_description& desc) {
            add_read_db_option(desc);
            add_target_options(desc);
            desc.add_options()("json",
                               "print one JSON object: {\"pending\": ..., \"runs\": [...], \"history\": [...], "
                               "\"deferrals\": [...]}");
          },
      .run =
          [](const Invocation& in) {
            const CheckTarget target = target_of(in);
            auto db = in.connect_for_reading();
            const CheckTrace trace = Checks(*db).trace(target.id, target.job_key);
            std::vector<std::int64_t> ids;
            if (trace.pending) ids.push_back(trace.pending->id);
            for (const auto& h : trace.history) ids.push_back(h.id);
            const std::vector<FlowDeferral> deferrals = FlowLimits(*db).deferrals_of(ids);
            if (in.json()) {
              nlohmann::json out = to_json(trace);
              out["deferrals"] = nlohmann::json::array();
              for (const FlowDeferral& d : deferrals) out["deferrals"].push_back(to_json(d));
              std::cout << out << "\n";
              return kOk;
            }
            const auto& history = trace.history;
            if (!trace.pending) {
              std::cout << "pending: none\n";
            } else {
              const PendingCheck& c = *trace.pending;
              std::cout << "pending: id=" << c.id << " job_key=" << or_dash(c.job_key) << " job=" << c.job
                        << " entity=" << c.entity_name << "/" << c.entity_key << " group_key=" << or_dash(c.group_key) << "\n"
                        << "  next_check_at=" << format_time(c.next_check_at)
                        << " first_check_at=" << format_time(c.first_check_at) << " checks=" << c.check_count
                        << " attempts=" << c.attempts << " priority=" << c.priority << "\n"
                        << "  enqueued_on=" << format_time(c.enqueued_on) << " by " << c.enqueued_by << "\n"
                        << "  payload=" << c.payload.dump() << "\n";
              if (c.last_error) std::cout << "  last_error=" << *c.last_error << "\n";
              // The enqueue's: a later answer of the check's class may have moved its time since (its run lines).
              if (c.calendar) std::cout << "  enqueued timed by " << business_timing(c) << "\n";
              if (c.traceparent) {
                std::cout << "  traceparent=" << *c.traceparent << (c.tracestate ? " tracestate=" + *c.tracestate : "")
                          << "\n";
              }
            }
            print_timeline(trace, deferrals);
            std::cout << "history: " << history.size() << " row(s)\n";
            if (!history.empty()) print_history_table(history);
            return kOk;
          },
  };
}

}  // namespace prescient::cli
