#include <nlohmann/json.hpp>
#include <soci/soci.h>

#include <iostream>

#include "check_options.hpp"
#include "prescient/outcome.hpp"
#include "check_tables.hpp"
#include "prescient/checks.hpp"

namespace prescient::cli {

Command history_command() {
  return {
      .name = "history",
      .summary = "List finished checks (done, cancelled, failed, guarded, ...), newest first.",
      .usage = "history [--job-key KEY] [--id N] [--entity-name NAME] [--entity-key KEY] [--outcome OUTCOME]\n"
               "                         [--since TIME] [--limit N] [--read-db URL] [--json]",
      .add_options =
          [](po::options_description& desc) {
            add_read_db_option(desc);
            desc.add_options()
                ("job-key", po::value<std::string>()->value_name("KEY"), "only this job key")
                ("id", po::value<std::int64_t>()->value_name("N"), "only this check id")
                ("entity-name", po::value<std::string>()->value_name("NAME"), "only this entity name")
                ("entity-key", po::value<std::string>()->value_name("KEY"), "only this entity key")
                ("outcome", po::value<std::string>()->value_name("OUTCOME"),
                 "only this outcome: done, failed, cancelled, ... (the list and what each means: the database's "
                 "prescient.outcomes(), docs/runner.md)")
                ("since", po::value<std::string>()->value_name("TIME"), "only rows finished at or after this time")
                ("limit", po::value<int>()->value_name("N")->default_value(100), "at most N rows")
                ("json", "print a JSON array");
          },
      .run =
          [](const Invocation& in) {
            const HistoryFilter filter{
                .job_key = optional_flag(in, "job-key"),
                .entity_name = optional_flag(in, "entity-name"),
                .entity_key = optional_flag(in, "entity-key"),
                .outcome = in.has("outcome") ? std::optional(parse_outcome(in.get<std::string>("outcome")))
                                             : std::nullopt,
                .id = in.has("id") ? std::optional(in.get<std::int64_t>("id")) : std::nullopt,
                .since = optional_time_flag(in, "since"),
                .limit = in.get<int>("limit")};
            auto db = in.connect_for_reading();
            const auto entries = Checks(*db).history(filter);
            if (in.json()) {
              print_json_array(entries);
            } else {
              print_history_table(entries);
            }
            return kOk;
          },
  };
}

}  // namespace prescient::cli
