#include "health_text.hpp"

#include <soci/soci.h>

#include <iostream>

#include "prescient/duration.hpp"
#include "prescient/time_text.hpp"

namespace prescient::cli {

DatabaseHealth read_primary_health(const Invocation& in, soci::session& reading) {
  if (!in.reads_from_replica()) return database_health(reading);
  return database_health(*in.connect_migrated());
}

void print_health(std::ostream& out, const DatabaseHealth& health, std::size_t tables) {
  out << "horizon        ";
  if (const HorizonHolder* oldest = health.horizon()) {
    out << oldest->describe() << " holds xmin " << oldest->held_xmin << ", " << oldest->xid_age
        << " transactions behind";
    if (const auto held = health.held_for(*oldest)) {
      out << ", since " << format_time(*oldest->held_since) << " ("
          << format_duration(std::chrono::duration_cast<std::chrono::seconds>(*held)) << ")";
    }
    if (health.holders.size() > 1) out << "\n               (" << health.holders.size() << " holders: prescient doctor judges each)";
  } else {
    out << "nothing holds back prescient's tables";
  }
  if (health.details_hidden()) {
    out << "\n               " << kHiddenDetailsNote;
  }
  std::size_t shown = 0;
  for (const TableVacuum& t : health.tables) {
    if (t.dead_tuples == 0 || shown == tables) break;  // most dead tuples first
    out << "\n" << (shown++ == 0 ? "dead tuples    " : "               ") << t.table << " " << t.dead_tuples << " ("
        << t.live_tuples << " live, autovacuum at " << t.vacuum_trigger << ", last autovacuum "
        << (t.last_autovacuum ? format_time(*t.last_autovacuum) : "never") << ")";
  }
  if (shown == 0) out << "\ndead tuples    none in prescient's tables";
  out << "\n";
}

}  // namespace prescient::cli
