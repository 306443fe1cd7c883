#include <nlohmann/json.hpp>
#include <soci/soci.h>

#include <iostream>

#include "check_options.hpp"
#include "prescient/client.hpp"
#include "prescient/errors.hpp"
#include "prescient/time_text.hpp"

namespace prescient::cli {

Command reschedule_command() {
  return {
      .name = "reschedule",
      .summary = "Move a pending check to another time (rounded up to the slot grid).",
      .usage = "reschedule (--job-key KEY | --id N) (--at TIME | --in DURATION) [--json]",
      .add_options =
          [](po::options_description& desc) {
            add_target_options(desc);
            add_time_options(desc);
            desc.add_options()("json", "print the result as one JSON object");
          },
      .run =
          [](const Invocation& in) {
            const CheckTarget target = target_of(in);
            const TimeChoice when = time_choice_of(in, true);
            auto db = in.connect_migrated();
            Client client(*db);
            const TimePoint at = when.at ? *when.at : client.now() + *when.in;
            const auto moved = target.id ? client.reschedule_id(*target.id, at) : client.reschedule_job_key(*target.job_key, at);
            if (!moved) throw NotFound("no pending check with " + target.describe());
            if (in.json()) {
              std::cout << nlohmann::json{{"id", moved->id},
                                          {"job_key", moved->job_key ? nlohmann::json(*moved->job_key) : nlohmann::json(nullptr)},
                                          {"next_check_at", format_time(moved->next_check_at)}}
                        << "\n";
            } else {
              std::cout << "rescheduled id=" << moved->id << " job_key=" << or_dash(moved->job_key)
                        << " next_check_at=" << format_time(moved->next_check_at) << "\n";
            }
            return kOk;
          },
  };
}

}  // namespace prescient::cli
