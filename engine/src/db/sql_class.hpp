#pragma once
// Internal: the `sql` job class's one statement (jobs/sql_job.cpp), through its entry point
// prescient.call_check_function (sql/functions/070_sql_class.sql), which resolves the function's name
// without it ever becoming SQL text.
#include <chrono>
#include <optional>
#include <string>

#include "prescient/time.hpp"

namespace soci {
class session;
}

namespace prescient::db {

// What the check function answered: the next time, or nothing (done), and the result it returned, if any
// (JSON text: a function returning jsonb may give one).
struct CheckFunctionAnswer {
  std::optional<TimePoint> next;
  std::optional<std::string> result;
};

// Calls `function` (schema.name) with (entity_key, payload, check_count) in a short transaction of its own
// on `db`, bounded by `timeout` (statement_timeout).
CheckFunctionAnswer call_check_function(soci::session& db, const std::string& function, const std::string& entity_key,
                                        const std::string& payload, int check_count,
                                        std::chrono::milliseconds timeout);

}  // namespace prescient::db
