#include <nlohmann/json.hpp>
#include <soci/soci.h>

#include <iostream>

#include "check_options.hpp"
#include "check_tables.hpp"
#include "prescient/errors.hpp"
#include "prescient/checks.hpp"
#include "prescient/flow_limits.hpp"
#include "prescient/time_text.hpp"

namespace prescient::cli {

Command show_command() {
  return {
      .name = "show",
      .summary = "Show one check's whole trace: its pending row, if any, the times flow limits deferred it, and "
                 "its history rows.",
      .usage = "show (--job-key KEY | --id N) [--read-db URL] [--json]",
      .add_options =
          [](po::options_description& desc) {
            add_read_db_option(desc);
            add_target_options(desc);
            desc.add_options()("json",
                               "print one JSON object: {\"pending\": ..., \"history\": [...], \"deferrals\": [...]}");
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
                        << " attempts=" << c.attempts << "\n"
                        << "  enqueued_on=" << format_time(c.enqueued_on) << " by " << c.enqueued_by << "\n"
                        << "  payload=" << c.payload.dump() << "\n";
              if (c.last_error) std::cout << "  last_error=" << *c.last_error << "\n";
            }
            for (const FlowDeferral& d : deferrals) {
              std::cout << "deferred: check " << d.check_id << " at " << format_time(d.deferred_at) << " by limit "
                        << d.limit_name << " (" << d.key_value << ") until " << format_time(d.until) << "\n";
            }
            std::cout << "history: " << history.size() << " row(s)\n";
            if (!history.empty()) print_history_table(history);
            return kOk;
          },
  };
}

}  // namespace prescient::cli
