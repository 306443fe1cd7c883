#include <nlohmann/json.hpp>
#include <soci/soci.h>

#include <iostream>

#include "check_options.hpp"
#include "check_tables.hpp"
#include "prescient/errors.hpp"
#include "prescient/checks.hpp"
#include "prescient/time_text.hpp"

namespace prescient::cli {

Command show_command() {
  return {
      .name = "show",
      .summary = "Show one check's whole trace: its pending row, if any, and its history rows.",
      .usage = "show (--job-key KEY | --id N) [--read-db URL] [--json]",
      .add_options =
          [](po::options_description& desc) {
            add_read_db_option(desc);
            add_target_options(desc);
            desc.add_options()("json", "print one JSON object: {\"pending\": ..., \"history\": [...]}");
          },
      .run =
          [](const Invocation& in) {
            const CheckTarget target = target_of(in);
            auto db = in.connect_for_reading();
            const CheckTrace trace = Checks(*db).trace(target.id, target.job_key);
            if (in.json()) {
              std::cout << to_json(trace) << "\n";
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
            std::cout << "history: " << history.size() << " row(s)\n";
            if (!history.empty()) print_history_table(history);
            return kOk;
          },
  };
}

}  // namespace prescient::cli
