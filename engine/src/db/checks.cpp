// Checks: reading pending checks and their history with optional filters, and reviving a failed one.
#include <nlohmann/json.hpp>

#include "db/check_columns.hpp"
#include "db/pq.hpp"
#include "db/connection.hpp"
#include "prescient/errors.hpp"
#include "core/text_rules.hpp"
#include "prescient/checks.hpp"
#include "prescient/time_text.hpp"

namespace prescient {

using namespace prescient::db;
using namespace prescient::core;
namespace {

// A WHERE clause grown from fixed SQL fragments; values only ever travel as parameters.
class Conditions {
 public:
  // `fragment` holds one '?' where its parameter goes, e.g. "job = ?".
  template <class T>
  void add(std::string fragment, const std::optional<T>& value) {
    if (!value) return;
    params_.push_back(text_of(*value));
    fragment.replace(fragment.find('?'), 1, placeholder(params_.size()));
    sql_ += (sql_.empty() ? " WHERE " : " AND ") + fragment;
  }
  // A page's cursor: rows after (or before) `cursor` in the order of (time_column, id_column).
  void add_cursor(const char* time_column, const char* id_column, const char* comparison,
                  const std::optional<PageCursor>& cursor) {
    if (!cursor) return;
    params_.push_back(text_of(cursor->at));
    const std::string at = placeholder(params_.size());
    params_.push_back(text_of(cursor->id));
    sql_ += std::string(sql_.empty() ? " WHERE " : " AND ") + "(" + time_column + ", " + id_column + ") " +
            comparison + " (prescient.at_us(" + at + "), " + placeholder(params_.size()) + ")";
  }
  // A value used elsewhere in the statement than the WHERE clause; returns its placeholder.
  std::string bind(std::string value) {
    params_.push_back(std::move(value));
    return placeholder(params_.size());
  }
  void add_fixed(const std::string& fragment) { sql_ += (sql_.empty() ? " WHERE " : " AND ") + fragment; }
  const std::string& sql() const { return sql_; }
  pq::Params params_with(int limit) {
    if (limit < 1) throw InvalidInput("invalid limit " + std::to_string(limit) + ": it must be at least 1");
    pq::Params all = params_;
    all.push_back(std::to_string(limit));
    return all;
  }
  std::string limit_placeholder() const { return placeholder(params_.size() + 1); }
  // Appended rather than `"$" + std::to_string(n)`, on which GCC 12 warns falsely (-Wrestrict, its bug 105329).
  static std::string placeholder(std::size_t n) {
    std::string p = "$";
    p += std::to_string(n);
    return p;
  }

 private:
  static std::string text_of(const std::string& v) { return v; }
  static std::string text_of(std::int64_t v) { return std::to_string(v); }
  static std::string text_of(TimePoint v) { return std::to_string(to_unix_micros(v)); }

  std::string sql_;
  pq::Params params_;
};

// The CheckFields columns, in the order read_check_fields reads them (db/check_columns.hpp first); both
// tables have them.
const std::string kCheckFieldColumns =
    db::check_column_list(false) +
    ", last_error, prescient.us(enqueued_on), enqueued_by, priority, traceparent, tracestate, calendar,"
    " calendar_version, business_delay";
constexpr int kLastErrorColumn = db::kCheckColumnCount, kEnqueuedOnColumn = kLastErrorColumn + 1,
              kEnqueuedByColumn = kLastErrorColumn + 2, kPriorityColumn = kLastErrorColumn + 3,
              kTraceparentColumn = kLastErrorColumn + 4, kTracestateColumn = kLastErrorColumn + 5,
              kCalendarColumn = kLastErrorColumn + 6, kCalendarVersionColumn = kLastErrorColumn + 7,
              kBusinessDelayColumn = kLastErrorColumn + 8, kCheckFieldCount = kLastErrorColumn + 9;

const std::string kPendingColumns = kCheckFieldColumns + ", prescient.us(next_check_at)";
const std::string kHistoryColumns =
    kCheckFieldColumns +
    ", prescient.us(last_check_at), history_id, prescient.us(finished_at), finished_by, outcome, run_micros,"
    " result::text";

// A dead letter, over rows of prescient.job_history: its definition is SQL's (prescient.dead_letter,
// sql/functions/075_queue_figures.sql), inlined by the planner, which still uses the partial index
// job_history_dead_letter.
const std::string kDeadLetterCondition = "prescient.dead_letter(outcome, retried)";

void read_check_fields(const pq::Result& rows, int r, CheckFields& out) {
  db::read_check_columns(rows, r, out);
  out.payload = readable_payload(rows.text(r, db::kPayloadColumn));
  out.last_error = rows.optional_text(r, kLastErrorColumn);
  out.enqueued_on = rows.time(r, kEnqueuedOnColumn);
  out.enqueued_by = rows.text(r, kEnqueuedByColumn);
  out.priority = static_cast<int>(rows.integer(r, kPriorityColumn));
  out.traceparent = rows.optional_text(r, kTraceparentColumn);
  out.tracestate = rows.optional_text(r, kTracestateColumn);
  out.calendar = rows.optional_text(r, kCalendarColumn);
  if (const auto version = rows.optional_integer(r, kCalendarVersionColumn)) {
    out.calendar_version = static_cast<int>(*version);
  }
  out.business_delay = rows.optional_text(r, kBusinessDelayColumn);
}

}  // namespace

std::vector<PendingCheck> Checks::pending(const PendingFilter& filter) {
  Conditions where;
  where.add("id = ?", filter.id);
  where.add("job_key = ?", filter.job_key);
  where.add("job = ?", filter.job);
  where.add("entity_name = ?", filter.entity_name);
  where.add("entity_key = ?", filter.entity_key);
  where.add("group_key = ?", filter.group_key);
  where.add("next_check_at < prescient.at_us(?)", filter.due_before);
  where.add_cursor("next_check_at", "id", ">", filter.after);
  const std::string sql = "SELECT " + kPendingColumns + " FROM prescient.future_job" + where.sql();
  const std::string limit = where.limit_placeholder();
  const pq::Result rows = pq::exec(native_connection(db_), "cannot list pending checks",
                                   sql + " ORDER BY next_check_at, id LIMIT " + limit, where.params_with(filter.limit));
  std::vector<PendingCheck> out(rows.rows());
  for (int r = 0; r < rows.rows(); ++r) {
    read_check_fields(rows, r, out[r]);
    out[r].next_check_at = rows.time(r, kCheckFieldCount);
  }
  return out;
}

std::vector<HistoryEntry> Checks::history(const HistoryFilter& filter, bool oldest_first) {
  if (filter.outcome) {  // an outcome the list does not hold is refused naming the list, not answered with none
    pq::exec(native_connection(db_), "cannot read history", "SELECT prescient.known_outcome($1)",
             {pq::Param(filter.outcome->name())});
  }
  Conditions where;
  where.add("id = ?", filter.id);
  where.add("job_key = ?", filter.job_key);
  where.add("entity_name = ?", filter.entity_name);
  where.add("entity_key = ?", filter.entity_key);
  where.add("outcome = ?", filter.outcome ? std::optional(std::string(to_string(*filter.outcome))) : std::nullopt);
  where.add("job = ?", filter.job);
  where.add("finished_at >= prescient.at_us(?)", filter.since);
  where.add_cursor("finished_at", "history_id", "<", filter.before);
  if (filter.dead_letters_only) where.add_fixed(kDeadLetterCondition);
  const std::string sql = "SELECT " + kHistoryColumns + " FROM prescient.job_history" + where.sql();
  const char* order = oldest_first ? " ORDER BY finished_at, history_id" : " ORDER BY finished_at DESC, history_id DESC";
  const std::string limit = where.limit_placeholder();
  const pq::Result rows = pq::exec(native_connection(db_), "cannot read history",
                                   sql + order + " LIMIT " + limit, where.params_with(filter.limit));
  std::vector<HistoryEntry> out(rows.rows());
  for (int r = 0; r < rows.rows(); ++r) {
    read_check_fields(rows, r, out[r]);
    const int c = kCheckFieldCount;
    out[r].last_check_at = rows.time(r, c);
    out[r].history_id = rows.integer(r, c + 1);
    out[r].finished_at = rows.time(r, c + 2);
    out[r].finished_by = rows.text(r, c + 3);
    out[r].outcome = parse_outcome(rows.text(r, c + 4));
    out[r].run_micros = rows.optional_integer(r, c + 5);
    if (const auto result = rows.optional_text(r, c + 6)) out[r].result = readable_payload(*result);
  }
  return out;
}

CheckTrace Checks::trace(std::optional<std::int64_t> id, std::optional<std::string> job_key) {
  // A job key may have named several checks over time: the trace shows them all.
  constexpr int kTraceLimit = 1000;
  CheckTrace trace;
  auto pending_rows = pending({.job_key = job_key, .id = id, .limit = 1});
  if (!pending_rows.empty()) trace.pending = std::move(pending_rows.front());
  trace.history = history({.job_key = job_key, .id = id, .limit = kTraceLimit}, true);
  if (!trace.pending && trace.history.empty()) {
    throw NotFound(id ? "no check with id " + std::to_string(*id) : "no check with job key '" + job_key.value_or("") + "'");
  }
  std::vector<std::int64_t> ids;
  if (trace.pending) ids.push_back(trace.pending->id);
  for (const HistoryEntry& h : trace.history) ids.push_back(h.id);
  const pq::Result rows = pq::exec(
      native_connection(db_), "cannot read the check's runs",
      "SELECT id, prescient.us(due_at), prescient.us(finished_at), run_micros, runner, result,"
      "       prescient.us(next_check_at), prescient.us(answered_at), check_count, attempts, error, run_result::text,"
      "       calendar, calendar_version, business_delay"
      "  FROM prescient.check_run WHERE id = ANY ($1::bigint[]) ORDER BY finished_at, due_at LIMIT $2",
      {pq::integer_array(ids), std::to_string(kTraceLimit)});
  trace.runs.resize(rows.rows());
  for (int r = 0; r < rows.rows(); ++r) {
    trace.runs[r] = {.id = rows.integer(r, 0),
                     .due_at = rows.time(r, 1),
                     .finished_at = rows.time(r, 2),
                     .run_micros = rows.optional_integer(r, 3),
                     .runner = rows.text(r, 4),
                     .result = rows.text(r, 5),
                     .next_check_at = rows.time(r, 6),
                     .answered_at = rows.optional_time(r, 7),
                     .check_count = static_cast<int>(rows.integer(r, 8)),
                     .attempts = static_cast<int>(rows.integer(r, 9)),
                     .error = rows.optional_text(r, 10),
                     .calendar = rows.optional_text(r, 12),
                     .business_delay = rows.optional_text(r, 14)};
    if (const auto result = rows.optional_text(r, 11)) trace.runs[r].run_result = readable_payload(*result);
    if (const auto version = rows.optional_integer(r, 13)) trace.runs[r].calendar_version = static_cast<int>(*version);
  }
  return trace;
}

PendingCheck Checks::revive_failed(std::int64_t id, TimePoint at) {
  // The rule and its refusals are SQL's (sql/functions/076_retry.sql): PR409 throws InvalidInput, PR404 NotFound.
  pq::exec(native_connection(db_), "cannot revive the check", "SELECT prescient.retry_failed_check($1, prescient.at_us($2))",
           {std::to_string(id), pq::micros(at)});
  return pending({.id = id, .limit = 1}).front();
}

std::int64_t Checks::count_dead_letters(const std::optional<std::string>& job, TimePoint since, int at_most) {
  Conditions where;
  where.add("finished_at >= prescient.at_us(?)", std::optional(since));
  where.add("job = ?", job);
  where.add_fixed(kDeadLetterCondition);
  const std::string limit = where.limit_placeholder();
  return pq::exec(native_connection(db_), "cannot count dead letters",
                  "SELECT count(*) FROM (SELECT FROM prescient.job_history" + where.sql() + " LIMIT " + limit + ") AS d",
                  where.params_with(at_most))
      .integer(0, 0);
}

Checks::RevivedDeadLetters Checks::revive_dead_letters(const std::optional<std::string>& job, TimePoint since,
                                                       std::int64_t after_id, int limit, TimePoint at) {
  const pq::Result counts = pq::exec(
      native_connection(db_), "cannot revive dead letters",
      "SELECT picked, revived, last_id FROM prescient.retry_dead_letters($1, prescient.at_us($2), $3, $4, prescient.at_us($5))",
      {job, pq::micros(since), std::to_string(after_id), std::to_string(limit), pq::micros(at)});
  RevivedDeadLetters out;
  out.revived = counts.integer(0, 1);
  out.skipped = counts.integer(0, 0) - out.revived;
  out.last_id = counts.optional_integer(0, 2);
  return out;
}

bool Checks::pause_job(const std::string& job, const std::string& by, TimePoint now) {
  return pq::exec(native_connection(db_), "cannot pause the job class",
                  "SELECT prescient.pause_job($1, $2, prescient.at_us($3))::int", {job, by, pq::micros(now)})
             .integer(0, 0) == 1;
}

bool Checks::resume_job(const std::string& job) {
  return pq::exec(native_connection(db_), "cannot resume the job class", "SELECT prescient.resume_job($1)::int", {job})
             .integer(0, 0) == 1;
}

}  // namespace prescient
