#pragma once
// The database's health as `stats` and `doctor` print it: who holds the horizon, the tables with the most dead
// tuples, whether other sessions' details are hidden.
#include <iosfwd>
#include <cstddef>

#include "command.hpp"
#include "prescient/database_health.hpp"

namespace prescient::cli {

// The health, read on the primary (--db) even when the command's other reads go to a replica (--read-db): a
// replica's statistics are its own sessions and vacuum, not the ones that hold back the primary's tables.
// `reading` is the command's own session, used when it is the primary's.
DatabaseHealth read_primary_health(const Invocation& in, soci::session& reading);

// `stats`'s lines: the oldest holder of the horizon, the hidden details' note, the tables with dead tuples
// (at most `tables`, the most first).
void print_health(std::ostream& out, const DatabaseHealth& health, std::size_t tables);

}  // namespace prescient::cli
