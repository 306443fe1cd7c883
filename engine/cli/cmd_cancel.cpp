#include <nlohmann/json.hpp>
#include <soci/soci.h>

#include <iostream>

#include "check_options.hpp"
#include "prescient/client.hpp"
#include "prescient/errors.hpp"

namespace prescient::cli {

Command cancel_command() {
  return {
      .name = "cancel",
      .summary = "Cancel a pending check: it moves to the history as `cancelled`, with who and when.",
      .usage = "cancel (--job-key KEY | --id N) [--by WHO] [--json]",
      .add_options =
          [](po::options_description& desc) {
            add_target_options(desc);
            desc.add_options()
                ("by", po::value<std::string>()->value_name("WHO"), "recorded as finished_by (default: the OS user)")
                ("json", "print the result as one JSON object");
          },
      .run =
          [](const Invocation& in) {
            const CheckTarget target = target_of(in);
            const auto by = optional_flag(in, "by");
            auto db = in.connect_migrated();
            Client client(*db);
            const auto id = target.id ? client.cancel_id(*target.id, by) : client.cancel_job_key(*target.job_key, by);
            if (!id) {
              throw NotFound("no pending check with " + target.describe() +
                             " (if it finished already, `prescient show` has its history)");
            }
            if (in.json()) {
              std::cout << nlohmann::json{{"id", *id}, {"status", "cancelled"}} << "\n";
            } else {
              std::cout << "cancelled id=" << *id << "\n";
            }
            return kOk;
          },
  };
}

}  // namespace prescient::cli
