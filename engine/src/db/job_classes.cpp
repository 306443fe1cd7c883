#include "prescient/job_classes.hpp"

#include "db/connection.hpp"
#include "db/pq.hpp"
#include "prescient/duration.hpp"
#include "prescient/registry.hpp"
#include "prescient/time_text.hpp"

namespace prescient {

using namespace prescient::db;

namespace {

constexpr const char* kColumns =
    "job, runs_in, origin, prescient.us(declared_at), declared_by, prescient.us(seen_at), max_checks, max_attempts,"
    " backoff_seconds, backoff_max_seconds, timeout_seconds, prescient.us(policy_updated_at), policy_updated_by";

JobClassRow row_of(const pq::Result& rows, int r) {
  const auto seconds = [&](int col) {
    const auto value = rows.optional_integer(r, col);
    return value ? std::optional(std::chrono::seconds{*value}) : std::nullopt;
  };
  const auto integer = [&](int col) {
    const auto value = rows.optional_integer(r, col);
    return value ? std::optional(static_cast<int>(*value)) : std::nullopt;
  };
  return {.job = rows.text(r, 0),
          .runs_in = rows.text(r, 1),
          .origin = rows.text(r, 2),
          .declared_at = rows.time(r, 3),
          .declared_by = rows.text(r, 4),
          .seen_at = rows.optional_time(r, 5),
          .max_checks = integer(6),
          .max_attempts = integer(7),
          .backoff = seconds(8),
          .backoff_max = seconds(9),
          .timeout = seconds(10),
          .policy_updated_at = rows.optional_time(r, 11),
          .policy_updated_by = rows.optional_text(r, 12)};
}

}  // namespace

int declare_job_classes(soci::session& db, const Registry& registry, const std::string& by, TimePoint now) {
  std::vector<std::string> names = registry.names();
  std::vector<std::string> origins;
  origins.reserve(names.size());
  for (const std::string& name : names) origins.push_back(registry.origin_of(name));
  const pq::Result rows = pq::exec(native_connection(db), "cannot declare the job classes",
                                   "SELECT prescient.declare_job_classes($1::text[], $2::text[], $3,"
                                   " prescient.at_us($4))",
                                   {pq::text_array(names), pq::text_array(origins), by, pq::micros(now)});
  return static_cast<int>(rows.integer(0, 0));
}

std::vector<JobClassRow> job_classes(soci::session& db) {
  const pq::Result rows = pq::exec(native_connection(db), "cannot read the job classes",
                                   std::string("SELECT ") + kColumns + " FROM prescient.job_class ORDER BY job COLLATE \"C\"");
  std::vector<JobClassRow> out;
  out.reserve(rows.rows());
  for (int r = 0; r < rows.rows(); ++r) out.push_back(row_of(rows, r));
  return out;
}

std::vector<JobClassListing> job_class_listing(soci::session& db) {
  // USING (job): the columns' unqualified job is the class's. The pending figures are a few rows per class.
  const pq::Result rows = pq::exec(
      native_connection(db), "cannot read the job classes",
      std::string("SELECT ") + kColumns +
          ", prescient.us(p.paused_at), p.paused_by,"
          " CASE WHEN EXISTS (SELECT 1 FROM prescient.queue_figures) THEN"
          "   (SELECT coalesce(sum(f.checks), 0) FROM prescient.pending_figure f WHERE f.job = job_class.job) END"
          " FROM prescient.job_class LEFT JOIN prescient.paused_job p USING (job) ORDER BY job COLLATE \"C\"");
  std::vector<JobClassListing> out;
  out.reserve(rows.rows());
  for (int r = 0; r < rows.rows(); ++r) {
    out.push_back({.row = row_of(rows, r),
                   .paused_at = rows.optional_time(r, 13),
                   .paused_by = rows.optional_text(r, 14),
                   .pending = rows.optional_integer(r, 15)});
  }
  return out;
}

std::optional<JobClassRow> job_class(soci::session& db, const std::string& job) {
  const pq::Result rows = pq::exec(native_connection(db), "cannot read the job class",
                                   std::string("SELECT ") + kColumns + " FROM prescient.job_class WHERE job = $1", {job});
  return rows.rows() == 0 ? std::nullopt : std::optional(row_of(rows, 0));
}

std::string add_job_class(soci::session& db, const std::string& job, bool worker, const std::string& by, TimePoint now) {
  const pq::Result rows = pq::exec(native_connection(db), "cannot declare the job class",
                                   "SELECT prescient.job_class_add($1, $2::boolean, $3, prescient.at_us($4))",
                                   {job, worker ? "true" : "false", by, pq::micros(now)});
  return rows.text(0, 0);
}

void forget_job_class(soci::session& db, const std::string& job) {
  pq::exec(native_connection(db), "cannot forget the job class", "SELECT prescient.job_class_forget($1)", {job});
}

JobClassRow set_job_policy(soci::session& db, const std::string& job, const JobPolicyChange& change,
                           const std::string& by, TimePoint now) {
  const pq::Result rows = pq::exec(
      native_connection(db), "cannot set the job class's policy",
      std::string("SELECT ") + kColumns +
          " FROM prescient.set_job_policy($1, $2::integer, $3::integer, $4::interval, $5::interval, $6::interval,"
          " $7, prescient.at_us($8), $9::text[])",
      {job, pq::number_text(change.max_checks), pq::number_text(change.max_attempts), pq::interval_text(change.backoff),
       pq::interval_text(change.backoff_max), pq::interval_text(change.timeout), by, pq::micros(now),
       pq::text_array(change.clear)});
  return row_of(rows, 0);
}

nlohmann::json to_json(const JobClassRow& row) {
  const auto time = [](const std::optional<TimePoint>& t) {
    return t ? nlohmann::json(format_time(*t)) : nlohmann::json(nullptr);
  };
  const auto duration = [](const std::optional<std::chrono::seconds>& d) {
    return d ? nlohmann::json(format_duration(*d)) : nlohmann::json(nullptr);
  };
  const auto integer = [](const std::optional<int>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  return {{"name", row.job},
          {"runs_in", row.runs_in},
          {"origin", row.origin},
          {"declared_at", format_time(row.declared_at)},
          {"declared_by", row.declared_by},
          {"seen_at", time(row.seen_at)},
          {"max_checks", integer(row.max_checks)},
          {"max_attempts", integer(row.max_attempts)},
          {"backoff", duration(row.backoff)},
          {"backoff_max", duration(row.backoff_max)},
          {"timeout", duration(row.timeout)},
          {"policy_updated_at", time(row.policy_updated_at)},
          {"policy_updated_by", row.policy_updated_by ? nlohmann::json(*row.policy_updated_by) : nlohmann::json(nullptr)}};
}

nlohmann::json to_json(const JobClassListing& listing) {
  nlohmann::json out = to_json(listing.row);
  out["paused"] = listing.paused_at
                      ? nlohmann::json{{"paused_at", format_time(*listing.paused_at)}, {"paused_by", *listing.paused_by}}
                      : nlohmann::json(nullptr);
  out["pending"] = listing.pending ? nlohmann::json(*listing.pending) : nlohmann::json(nullptr);
  return out;
}

}  // namespace prescient
