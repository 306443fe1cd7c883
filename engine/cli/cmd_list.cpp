#include <nlohmann/json.hpp>
#include <soci/soci.h>

#include <iostream>

#include "check_options.hpp"
#include "check_tables.hpp"
#include "prescient/checks.hpp"

namespace prescient::cli {

Command list_command() {
  return {
      .name = "list",
      .summary = "List pending checks, soonest first.",
      .usage = "list [--job CLASS] [--entity-name NAME] [--entity-key KEY] [--group-key KEY] [--due-before TIME]\n"
               "                      [--limit N] [--read-db URL] [--json]",
      .add_options =
          [](po::options_description& desc) {
            add_read_db_option(desc);
            desc.add_options()
                ("job", po::value<std::string>()->value_name("CLASS"), "only this job class")
                ("entity-name", po::value<std::string>()->value_name("NAME"), "only this entity name")
                ("entity-key", po::value<std::string>()->value_name("KEY"), "only this entity key")
                ("group-key", po::value<std::string>()->value_name("KEY"), "only this group key")
                ("due-before", po::value<std::string>()->value_name("TIME"), "only checks due before this time")
                ("limit", po::value<int>()->value_name("N")->default_value(100), "at most N checks")
                ("json", "print a JSON array");
          },
      .run =
          [](const Invocation& in) {
            const PendingFilter filter{.job = optional_flag(in, "job"),
                                       .entity_name = optional_flag(in, "entity-name"),
                                       .entity_key = optional_flag(in, "entity-key"),
                                       .group_key = optional_flag(in, "group-key"),
                                       .due_before = optional_time_flag(in, "due-before"),
                                       .limit = in.get<int>("limit")};
            auto db = in.connect_for_reading();
            const auto checks = Checks(*db).pending(filter);
            if (in.json()) {
              print_json_array(checks);
            } else {
              print_pending_table(checks);
            }
            return kOk;
          },
  };
}

}  // namespace prescient::cli
