#pragma once
// Internal: the columns every read of a check starts with, named once: the claim's SELECT list (read in
// binary) and the listings' (read as text, times as microseconds) are both made from kCheckColumns, and
// read_check_columns reads them by the same positions, so a list and its reader cannot drift. Reading
// them fills a job's Check (the claim) or a stored record's CheckFields (listings) alike.
#include <array>
#include <string>

#include "db/pq.hpp"

namespace prescient::db {

// A column of a check as each kind of read selects it.
struct CheckColumn {
  const char* binary;  // in a result read in binary: the column as it is
  const char* text;    // in a result read as text: a time as microseconds (pq::Result::time reads either)
};

// In reading order. Positions: see the names below.
inline constexpr std::array<CheckColumn, 10> kCheckColumns{{
    {"id", "id"},
    {"job", "job"},
    {"entity_name", "entity_name"},
    {"entity_key", "entity_key"},
    {"job_key", "job_key"},
    {"group_key", "group_key"},
    {"payload", "payload::text"},
    {"first_check_at", "prescient.us(first_check_at)"},
    {"check_count", "check_count"},
    {"attempts", "attempts"},
}};
enum CheckColumnIndex : int {
  kIdColumn,
  kJobColumn,
  kEntityNameColumn,
  kEntityKeyColumn,
  kJobKeyColumn,
  kGroupKeyColumn,
  kPayloadColumn,
  kFirstCheckAtColumn,
  kCheckCountColumn,
  kAttemptsColumn,
  kCheckColumnCount  // the first column a read selects after these
};
static_assert(kCheckColumnCount == kCheckColumns.size());

// "id, job, ..., attempts" for a read in binary (`binary`) or as text.
inline std::string check_column_list(bool binary) {
  std::string list;
  for (const CheckColumn& c : kCheckColumns) {
    if (!list.empty()) list += ", ";
    list += binary ? c.binary : c.text;
  }
  return list;
}

// Fills the fields the check's own columns give (not the payload, which each reader parses its way).
template <class CheckRow>
void read_check_columns(const pq::Result& rows, int r, CheckRow& out) {
  out.id = rows.integer(r, kIdColumn);
  out.job = rows.text(r, kJobColumn);
  out.entity_name = rows.text(r, kEntityNameColumn);
  out.entity_key = rows.text(r, kEntityKeyColumn);
  out.job_key = rows.optional_text(r, kJobKeyColumn);
  out.group_key = rows.optional_text(r, kGroupKeyColumn);
  out.first_check_at = rows.time(r, kFirstCheckAtColumn);
  out.check_count = static_cast<int>(rows.integer(r, kCheckCountColumn));
  out.attempts = static_cast<int>(rows.integer(r, kAttemptsColumn));
}

}  // namespace prescient::db
