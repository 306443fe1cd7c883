#include <nlohmann/json.hpp>
#include <soci/soci.h>

#include <iostream>

#include "command.hpp"
#include "prescient/duration.hpp"
#include "prescient/migrations.hpp"
#include "prescient/slot_grid.hpp"

namespace prescient::cli {

Command migrate_command() {
  return {
      .name = "migrate",
      .summary = "Create or upgrade the prescient schema (safe to run twice, or from two hosts at once).",
      .usage = "migrate [--slot DURATION] [--json] | migrate --print-bundle",
      .add_options =
          [](po::options_description& desc) {
            desc.add_options()
                ("slot", po::value<std::string>()->value_name("DURATION"),
                 "slot resolution of a new database (default 1m); must divide a day (1s..1d). "
                 "Fixed at creation: on an existing database it must match")
                ("json", "print the result as one JSON object")
                ("print-bundle", "print the schema as one SQL file that creates or upgrades it from any client, "
                 "with the same bookkeeping, and exit without connecting (sql/prescient-bundle.sql)");
          },
      .run =
          [](const Invocation& in) {
            if (in.has("print-bundle")) {
              std::cout << schema_bundle();
              return kOk;
            }
            std::optional<std::chrono::seconds> slot;
            if (in.has("slot")) {
              // A bad resolution is refused before touching the database.
              slot = in.parsed("slot", [](const std::string& text) { return SlotGrid{parse_duration(text)}.resolution(); });
            }
            auto db = in.connect();
            const MigrationReport report = migrate(*db, slot);
            if (in.json()) {
              std::cout << nlohmann::json{{"applied", report.applied},
                                          {"functions", report.functions},
                                          {"version", report.version},
                                          {"slot", format_duration(report.slot)},
                                          {"slot_seconds", report.slot.count()}}
                        << "\n";
              return kOk;
            }
            // Each file once, here: the migrator logs them at debug only.
            for (const std::string& name : report.applied) std::cout << "applied " << name << "\n";
            for (const std::string& name : report.functions) std::cout << "applied functions " << name << "\n";
            const bool changed = !report.applied.empty() || !report.functions.empty();
            std::cout << (changed ? "migrated" : "up to date") << ": schema version "
                      << report.version << ", slot " << format_duration(report.slot) << "\n";
            return kOk;
          },
  };
}

}  // namespace prescient::cli
