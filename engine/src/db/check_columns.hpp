#pragma once
// Internal: the columns every read of a check starts with, in this order: id, job, entity_name,
// entity_key, job_key, group_key, payload, first_check_at, check_count, attempts. Reading them fills
// a job's Check (the claim) or a stored record's CheckFields (listings) alike.
#include "db/pq.hpp"

namespace prescient::db {

inline constexpr int kPayloadColumn = 6;

// Fills the fields the check's own columns give (not the payload, which each reader parses its way).
template <class CheckRow>
void read_check_columns(const pq::Result& rows, int r, CheckRow& out) {
  out.id = rows.integer(r, 0);
  out.job = rows.text(r, 1);
  out.entity_name = rows.text(r, 2);
  out.entity_key = rows.text(r, 3);
  out.job_key = rows.optional_text(r, 4);
  out.group_key = rows.optional_text(r, 5);
  out.first_check_at = rows.time(r, 7);
  out.check_count = static_cast<int>(rows.integer(r, 8));
  out.attempts = static_cast<int>(rows.integer(r, 9));
}

}  // namespace prescient::db
