#include "db/connection.hpp"
#include "db/pq.hpp"
#include "prescient/server_clock.hpp"

namespace prescient {

using namespace prescient::db;

Micros server_clock_offset(soci::session& db, const Clock& local) {
  // clock_timestamp(), not now(): now() is the transaction's start, which a pooler or a long
  // transaction could hold back.
  const pq::Result row = pq::exec(native_connection(db), "cannot read the server's clock",
                                  "SELECT prescient.us(clock_timestamp())");
  const TimePoint after = local.now();
  return row.time(0, 0) - after;
}

}  // namespace prescient
