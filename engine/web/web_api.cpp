#include "web_api.hpp"

#include <httplib.h>
#include <soci/soci.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>

#include "prescient/calendars.hpp"
#include "prescient/checks.hpp"
#include "prescient/job_classes.hpp"
#include "prescient/client.hpp"
#include "prescient/database_health.hpp"
#include "prescient/database.hpp"
#include "prescient/duration.hpp"
#include "prescient/errors.hpp"
#include "prescient/flow_limits.hpp"
#include "prescient/health_problems.hpp"
#include "prescient/queue_stats.hpp"
#include "prescient/runners_seen.hpp"
#include "prescient/schedules.hpp"
#include "prescient/time_text.hpp"
#include "json_answer.hpp"
#include "session_pool.hpp"

namespace prescient::web {
namespace {

constexpr int kDefaultPage = 50;
constexpr int kMaxPage = 500;
// Dead letters are the failed checks of the last 30 days, as the overview's figure counts them.
constexpr std::chrono::days kDeadLetterDays{30};
// "Retry all that match" revives this many per request (the page asks again until none are left), and
// the count shown before it is bounded too: each request's work stays bounded whatever the backlog.
constexpr int kRevivedPerRequest = 250;
constexpr int kDeadLetterCountBound = 5000;
// A calendar's page draws its open time over the next 4 weeks.
constexpr int kCalendarDays = 28;

std::optional<std::string> param(const httplib::Request& request, const char* name) {
  if (!request.has_param(name)) return std::nullopt;
  std::string value = request.get_param_value(name);
  if (value.empty()) return std::nullopt;  // an empty search field filters nothing
  return value;
}

std::int64_t integer_of(const std::string& text, const std::string& what) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size()) {
    throw InvalidInput("invalid " + what + " '" + text + "': not an integer");
  }
  return value;
}

int limit_of(const httplib::Request& request) {
  const auto text = param(request, "limit");
  if (!text) return kDefaultPage;
  const std::int64_t limit = integer_of(*text, "limit");
  if (limit < 1 || limit > kMaxPage) {
    throw InvalidInput("invalid limit " + *text + ": between 1 and " + std::to_string(kMaxPage));
  }
  return static_cast<int>(limit);
}

// "TIME,ID", as the pages put the last row of a page into the next page's link.
std::optional<PageCursor> page_cursor_of(const httplib::Request& request, const char* name) {
  const auto text = param(request, name);
  if (!text) return std::nullopt;
  const auto comma = text->rfind(',');
  if (comma == std::string::npos) throw InvalidInput("invalid " + std::string(name) + " '" + *text + "': use TIME,ID");
  return PageCursor{parse_time(text->substr(0, comma)), integer_of(text->substr(comma + 1), name)};
}

std::int64_t id_of(const httplib::Request& request) { return integer_of(request.matches[1].str(), "check id"); }

nlohmann::json body_of(const httplib::Request& request) {
  if (request.body.empty()) return nlohmann::json::object();
  try {
    nlohmann::json body = nlohmann::json::parse(request.body);
    if (!body.is_object()) throw InvalidInput("the request body must be a JSON object");
    return body;
  } catch (const nlohmann::json::parse_error&) {
    throw InvalidInput("the request body is not JSON");
  }
}

// Runs one request on a pooled session; maps errors to statuses with {"error": "..."}: 400 bad input,
// 404 not found, 503 a database failure (the session is closed, not reused; with the connection or the server
// lost, the pool's idle sessions too), 500 anything else.
using Handler = std::function<void(soci::session&, const httplib::Request&, httplib::Response&)>;
httplib::Server::Handler serve(SessionPool& pool, Handler handler) {
  return [&pool, handler = std::move(handler)](const httplib::Request& request, httplib::Response& response) {
    std::optional<SessionPool::Lease> lease;
    try {
      lease.emplace(pool.take());
      handler(**lease, request, response);
    } catch (const InvalidInput& e) {
      send_error(response, 400, e.what());
    } catch (const NotFound& e) {
      send_error(response, 404, e.what());
    } catch (const std::exception& e) {
      if (lease) lease->discard();
      const auto* database = dynamic_cast<const DatabaseError*>(&e);
      if (database && lost_session_or_server(database->sqlstate())) pool.drop_idle();
      spdlog::warn("web: {} {} failed: {}", request.method, request.path, e.what());
      send_error(response, database ? 503 : 500, e.what());
    }
  };
}

// A search is indexed for each filter alone (docs/web.md); filters together can still make the server walk
// far for the rare combination none of the rows has. The deferrals of a day are as many as the limits held
// back. Such a read is cut, not left to hold a session; `what` and `advice` make the answer's message.
constexpr std::chrono::seconds kReadTimeout{5};

template <class Read>
auto within_read_time(soci::session& db, const std::string& what, const std::string& advice, Read read) {
  try {
    decltype(read()) found;
    within_statement_timeout(db, kReadTimeout, [&] { found = read(); });
    return found;
  } catch (const DatabaseError& e) {
    if (e.sqlstate() != "57014") throw;  // query_canceled
    throw DatabaseError(what + " took longer than " + std::to_string(kReadTimeout.count()) + "s and was stopped: " + advice,
                        e.sqlstate());
  }
}

template <class T>
nlohmann::json array_of(const std::vector<T>& items) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& item : items) out.push_back(to_json(item));
  return out;
}

void add_reads(httplib::Server& server, std::shared_ptr<const ApiContext> c) {
  server.Get("/api/config", [c](const httplib::Request& request, httplib::Response& response) {
    send_json(response, {{"read_only", c->read_only}, {"user", c->who(request)}});
  });
  server.Get("/api/stats", serve(c->reading, [c](soci::session& db, const httplib::Request& request, httplib::Response& response) {
               const auto slots = param(request, "slots");
               const std::int64_t n = slots ? integer_of(*slots, "slots") : 12;
               if (n < 1 || n > 1000) throw InvalidInput("invalid slots " + std::to_string(n) + ": between 1 and 1000");
               // Counts only when never counted: the figures are the refresher's, whatever their age (they carry it).
               send_json(response, to_json(queue_stats(db, c->clock.now(), static_cast<int>(n), Micros::max())));
             }));
  // The database's health, with doctor's problems at its default limits: read on the primary's pool even when
  // the pages read a replica, whose statistics are its own sessions, not those holding the primary back.
  server.Get("/api/health", serve(c->pool, [](soci::session& db, const httplib::Request&, httplib::Response& response) {
               const DatabaseHealth health = database_health(db);
               nlohmann::json answer = to_json(health);
               answer["problems"] = nlohmann::json::array();
               for (const HealthProblem& p : health_problems(health, HealthLimits{})) {
                 answer["problems"].push_back({{"subject", p.subject}, {"finding", p.finding}, {"advice", p.advice}});
               }
               send_json(response, answer);
             }));
  server.Get("/api/future", serve(c->reading, [c](soci::session& db, const httplib::Request& request, httplib::Response& response) {
               const std::string zoom = param(request, "zoom").value_or("slot");
               if (zoom != "slot" && zoom != "hour" && zoom != "day") {
                 throw InvalidInput("invalid zoom '" + zoom + "': slot, hour or day");
               }
               const FutureZoom by = zoom == "slot" ? FutureZoom::slot : zoom == "hour" ? FutureZoom::hour : FutureZoom::day;
               send_json(response, to_json(future(db, by, c->clock.now())));
             }));
  server.Get("/api/past", serve(c->reading, [c](soci::session& db, const httplib::Request&, httplib::Response& response) {
               send_json(response, to_json(past_day(db, c->clock.now())));
             }));
  server.Get("/api/checks", serve(c->reading, [](soci::session& db, const httplib::Request& request, httplib::Response& response) {
               const PendingFilter filter{.job = param(request, "job"),
                                          .entity_name = param(request, "entity_name"),
                                          .entity_key = param(request, "entity_key"),
                                          .group_key = param(request, "group_key"),
                                          .job_key = param(request, "job_key"),
                                          .id = {},
                                          .due_before = {},
                                          .after = page_cursor_of(request, "after"),
                                          .limit = limit_of(request)};
               // The entity index is (name, key): a key alone would read every pending check.
               if (filter.entity_key && !filter.entity_name) {
                 throw InvalidInput("an entity key is searched within an entity name: give entity_name too");
               }
               send_json(response, array_of(within_read_time(db, "the search", "narrow it with a job key, an entity, or a class",
                                                            [&] { return Checks(db).pending(filter); })));
             }));
  server.Get(R"(/api/checks/(\d+))", serve(c->reading, [](soci::session& db, const httplib::Request& request, httplib::Response& response) {
               const CheckTrace found = Checks(db).trace(id_of(request), std::nullopt);
               nlohmann::json trace = to_json(found);
               trace["deferrals"] = array_of(FlowLimits(db).deferrals_of({id_of(request)}));
               // The class's row of the registry (its policy set from SQL or `prescient jobs set`); null: none.
               const std::string& job = found.pending ? found.pending->job : found.history.back().job;
               const auto policy = job_class(db, job);
               trace["class_policy"] = policy ? to_json(*policy) : nlohmann::json(nullptr);
               send_json(response, trace);
             }));
  server.Get("/api/limits", serve(c->reading, [](soci::session& db, const httplib::Request&, httplib::Response& response) {
               FlowLimits limits(db);
               send_json(response, {{"limits", array_of(limits.list())}, {"deferrals", array_of(limits.figures())}});
             }));
  // The Limits page's chart: deferrals per hour and limit over the past day, counted from the deferrals.
  server.Get("/api/limits/deferrals", serve(c->reading, [c](soci::session& db, const httplib::Request&, httplib::Response& response) {
               const BucketSpan span = past_day_hours(c->clock.now());
               const auto hours = within_read_time(db, "counting the past day's deferrals",
                                                   "the totals per key value are in the table below",
                                                   [&] { return FlowLimits(db).deferrals_per_hour(span.from, span.to); });
               nlohmann::json answer{{"hours", array_of(hours)}};
               add_span(answer, span);
               send_json(response, answer);
             }));
  server.Get("/api/jobs", serve(c->reading, [](soci::session& db, const httplib::Request&, httplib::Response& response) {
               send_json(response, array_of(job_class_listing(db)));
             }));
  server.Get("/api/calendars", serve(c->reading, [](soci::session& db, const httplib::Request&, httplib::Response& response) {
               send_json(response, array_of(calendars(db)));
             }));
  server.Get("/api/calendars/(.+)", serve(c->reading, [c](soci::session& db, const httplib::Request& request, httplib::Response& response) {
               send_json(response, to_json(calendar_days(db, request.matches[1].str(), param(request, "from"), c->clock.now(),
                                                         kCalendarDays)));
             }));
  server.Get("/api/dead-letters/count", serve(c->reading, [c](soci::session& db, const httplib::Request& request, httplib::Response& response) {
               const std::int64_t matching = Checks(db).count_dead_letters(param(request, "job"), c->clock.now() - kDeadLetterDays,
                                                                           kDeadLetterCountBound);
               send_json(response, {{"matching", matching}, {"at_least", matching == kDeadLetterCountBound}});
             }));
  server.Get("/api/dead-letters", serve(c->reading, [c](soci::session& db, const httplib::Request& request, httplib::Response& response) {
               const HistoryFilter filter{.job = param(request, "job"),
                                          .outcome = Outcome::failed,
                                          .since = c->clock.now() - kDeadLetterDays,
                                          .dead_letters_only = true,
                                          .before = page_cursor_of(request, "before"),
                                          .limit = limit_of(request)};
               send_json(response, array_of(Checks(db).history(filter)));
             }));
  server.Get("/api/runners", serve(c->reading, [c](soci::session& db, const httplib::Request&, httplib::Response& response) {
               send_json(response, array_of(runners_seen(db, c->clock.now())));
             }));
  server.Get("/api/schedules", serve(c->reading, [c](soci::session& db, const httplib::Request& request, httplib::Response& response) {
               const std::string state = param(request, "state").value_or("");
               if (!state.empty() && state != "paused" && state != "invalid") {
                 throw InvalidInput("invalid state '" + state + "': paused or invalid (or none: every schedule)");
               }
               const auto found = Schedules(db, c->clock).list({.limit = limit_of(request),
                                                                .after = param(request, "after"),
                                                                .paused = state == "paused",
                                                                .invalid = state == "invalid",
                                                                .job = param(request, "job")});
               send_json(response, array_of(found));
             }));
  server.Get("/api/schedules/(.+)", serve(c->reading, [c](soci::session& db, const httplib::Request& request, httplib::Response& response) {
               send_json(response, to_json(Schedules(db, c->clock).detail(request.matches[1].str())));
             }));
}

// One line per action taken through the dashboard, naming who took it.
void log_action(const std::string& who, const std::string& what) { spdlog::info("web: {} {}", who, what); }

// A pending check: cancel it, move it to a time, or fire it at the next slot.
void add_check_actions(httplib::Server& server, const std::shared_ptr<const ApiContext>& c) {
  server.Post(R"(/api/checks/(\d+)/cancel)", serve(c->pool, [c](soci::session& db, const httplib::Request& request, httplib::Response& response) {
                const std::int64_t id = id_of(request);
                const std::string who = c->who(request);
                const auto cancelled = Client(db, {.clock = &c->clock, .enqueued_by = who}).cancel_id(id, who);
                if (!cancelled) throw NotFound("no pending check with id " + std::to_string(id));
                log_action(who, "cancelled check " + std::to_string(id));
                send_json(response, {{"cancelled", id}});
              }));
  const auto move_to = [c](soci::session& db, const httplib::Request& request, httplib::Response& response,
                           TimePoint at) {
    const std::int64_t id = id_of(request);
    const auto moved = Client(db, {.clock = &c->clock, .enqueued_by = c->who(request)}).reschedule_id(id, at);
    if (!moved) throw NotFound("no pending check with id " + std::to_string(id));
    log_action(c->who(request), "rescheduled check " + std::to_string(id) + " to " + format_time(moved->next_check_at));
    send_json(response, {{"id", moved->id}, {"next_check_at", format_time(moved->next_check_at)}});
  };
  server.Post(R"(/api/checks/(\d+)/reschedule)", serve(c->pool, [move_to](soci::session& db, const httplib::Request& request, httplib::Response& response) {
                const nlohmann::json body = body_of(request);
                if (!body.contains("at") || !body["at"].is_string()) throw InvalidInput("give the new time as {\"at\": \"<time>\"}");
                move_to(db, request, response, parse_time(body["at"].get<std::string>()));
              }));
  // The next slot: now, rounded up to the grid as every time is.
  server.Post(R"(/api/checks/(\d+)/fire)", serve(c->pool, [c, move_to](soci::session& db, const httplib::Request& request, httplib::Response& response) {
                move_to(db, request, response, c->clock.now());
              }));
}

// Dead letters: retry one, or all that match.
void add_dead_letter_actions(httplib::Server& server, const std::shared_ptr<const ApiContext>& c) {
  // Retry all that match: the page shows the count first, asks, then calls this until last_id is null.
  server.Post("/api/dead-letters/retry", serve(c->pool, [c](soci::session& db, const httplib::Request& request, httplib::Response& response) {
                const nlohmann::json body = body_of(request);
                std::optional<std::string> job;
                std::int64_t after_id = 0;
                if (body.contains("job") && !body["job"].is_null()) {
                  if (!body["job"].is_string()) throw InvalidInput("\"job\" must be a job class name or null");
                  if (!body["job"].get<std::string>().empty()) job = body["job"].get<std::string>();
                }
                if (body.contains("after_id") && !body["after_id"].is_null()) {
                  if (!body["after_id"].is_number_integer()) throw InvalidInput("\"after_id\" must be an integer");
                  after_id = body["after_id"].get<std::int64_t>();
                }
                const TimePoint now = c->clock.now();
                const auto revived = Checks(db).revive_dead_letters(job, now - kDeadLetterDays, after_id, kRevivedPerRequest, now);
                if (revived.revived > 0 || revived.skipped > 0) {
                  log_action(c->who(request), "retried " + std::to_string(revived.revived) + " dead letters" +
                                                  (job ? " of " + *job : "") + " up to id " + std::to_string(*revived.last_id) +
                                                  " (" + std::to_string(revived.skipped) + " skipped: job key taken)");
                }
                send_json(response, {{"revived", revived.revived},
                                     {"skipped", revived.skipped},
                                     {"last_id", revived.last_id ? nlohmann::json(*revived.last_id) : nlohmann::json(nullptr)}});
              }));
  server.Post(R"(/api/dead-letters/(\d+)/retry)", serve(c->pool, [c](soci::session& db, const httplib::Request& request, httplib::Response& response) {
                const PendingCheck revived = Checks(db).revive_failed(id_of(request), c->clock.now());
                log_action(c->who(request), "retried check " + std::to_string(revived.id));
                send_json(response, to_json(revived));
              }));
}

// A recurring schedule: pause (with a note), resume, remove, backfill a range, trigger one occurrence now.
void add_schedule_actions(httplib::Server& server, const std::shared_ptr<const ApiContext>& c) {
  server.Post("/api/schedules/(.+)/(pause|resume|remove)", serve(c->pool, [c](soci::session& db, const httplib::Request& request, httplib::Response& response) {
                const std::string id = request.matches[1].str();
                const std::string action = request.matches[2].str();
                const std::string who = c->who(request);
                Schedules schedules(db, c->clock);
                // A pause may say why: {"note": "..."} (empty or absent: no note).
                std::optional<std::string> note;
                if (const nlohmann::json body = body_of(request); action == "pause" && body.contains("note")) {
                  if (!body["note"].is_string() && !body["note"].is_null()) throw InvalidInput("\"note\" must be a string");
                  if (body["note"].is_string() && !body["note"].get<std::string>().empty()) note = body["note"].get<std::string>();
                }
                std::string status = "removed";
                if (action == "remove") schedules.remove(id, who);
                else status = pause_status(action, action == "pause" ? schedules.pause(id, who, note) : schedules.resume(id, who));
                log_action(who, action + " schedule " + id + ": " + status);
                send_json(response, {{"id", id}, {"status", status}});
              }));
  server.Post("/api/schedules/(.+)/backfill", serve(c->pool, [c](soci::session& db, const httplib::Request& request, httplib::Response& response) {
                const std::string id = request.matches[1].str();
                const nlohmann::json body = body_of(request);
                const auto time_field = [&](const char* name) {
                  if (!body.contains(name) || !body[name].is_string()) {
                    throw InvalidInput(std::string("give the range as {\"from\": \"<time>\", \"to\": \"<time>\"}: no \"") +
                                       name + "\"");
                  }
                  return parse_time(body[name].get<std::string>());
                };
                const TimePoint from = time_field("from"), to = time_field("to");
                const std::int64_t check = Schedules(db, c->clock).backfill(id, from, to, c->who(request));
                log_action(c->who(request), "backfill of schedule " + id + " from " + format_time(from) + " to " +
                                                format_time(to) + ": check " + std::to_string(check));
                send_json(response, {{"id", id}, {"check", check}});
              }));
  server.Post("/api/schedules/(.+)/trigger", serve(c->pool, [c](soci::session& db, const httplib::Request& request, httplib::Response& response) {
                const std::string id = request.matches[1].str();
                const std::string occurrence = Schedules(db, c->clock).trigger(id, c->who(request));
                log_action(c->who(request), "trigger of schedule " + id + ": occurrence " + occurrence);
                send_json(response, {{"id", id}, {"occurrence", occurrence}, {"status", "triggered"}});
              }));
}

void add_limit_actions(httplib::Server& server, const std::shared_ptr<const ApiContext>& c) {
  // Limits: set (create or replace) from the fields the Limits page reads; remove by name. limit_set is the
  // schema owner's: the dashboard's role may be refused (42501), which the page shows as it comes.
  server.Post("/api/limits", serve(c->pool, [c](soci::session& db, const httplib::Request& request, httplib::Response& response) {
                const FlowLimit limit = flow_limit_from_json(body_of(request));
                const std::string status = FlowLimits(db).set(limit, c->who(request), c->clock.now());
                log_action(c->who(request), "set limit " + limit.name + ": " + status);
                send_json(response, {{"name", limit.name}, {"status", status}});
              }));
  server.Post("/api/limits/(.+)/remove", serve(c->pool, [c](soci::session& db, const httplib::Request& request, httplib::Response& response) {
                const std::string name = request.matches[1].str();
                if (!FlowLimits(db).remove(name)) throw NotFound("no limit named '" + name + "'");
                log_action(c->who(request), "removed limit " + name);
                send_json(response, {{"name", name}, {"status", "removed"}});
              }));
}

// The body of POST /api/jobs/NAME/policy as a change: the syntax is judged here, each refusal one line naming
// the value; the values' rules (ranges, backoff_max against backoff) are prescient.set_job_policy's.
JobPolicyChange policy_change_of(const nlohmann::json& body) {
  static const std::vector<std::string> kFields{"max_checks", "max_attempts", "backoff", "backoff_max", "timeout"};
  JobPolicyChange change;
  for (const auto& [name, value] : body.items()) {
    if (name != "clear" && std::find(kFields.begin(), kFields.end(), name) == kFields.end()) {
      throw InvalidInput("unknown field '" + name + "': give max_checks, max_attempts, backoff, backoff_max, timeout or clear");
    }
  }
  // A whole number, as a JSON integer or its text (a form's field as typed).
  const auto whole = [&](const std::string& name) -> std::optional<int> {
    if (!body.contains(name) || body[name].is_null()) return std::nullopt;
    const nlohmann::json& value = body[name];
    if (name == "max_checks" && value == "unlimited") return 0;
    const std::string text = value.is_string() ? value.get<std::string>() : value.dump();
    int number = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
    if ((!value.is_string() && !value.is_number_integer()) || text.empty() || error != std::errc{} ||
        end != text.data() + text.size()) {
      throw InvalidInput(name + " '" + text + "' is not a whole number" +
                         (name == "max_checks" ? " (or unlimited)" : ""));
    }
    return number;
  };
  // A duration as prescient writes them ("30s", "1h30m"); its sign is SQL's to judge, as `jobs set`'s.
  const auto duration = [&](const std::string& name) -> std::optional<std::chrono::seconds> {
    if (!body.contains(name) || body[name].is_null()) return std::nullopt;
    if (!body[name].is_string()) throw InvalidInput(name + " " + body[name].dump() + " is not a duration: write it as \"30s\"");
    try {
      return parse_signed_duration(body[name].get<std::string>());
    } catch (const InvalidInput& e) {
      throw InvalidInput(name + ": " + e.what());
    }
  };
  change.max_checks = whole("max_checks");
  change.max_attempts = whole("max_attempts");
  change.backoff = duration("backoff");
  change.backoff_max = duration("backoff_max");
  change.timeout = duration("timeout");
  if (body.contains("clear") && !body["clear"].is_null()) {
    if (!body["clear"].is_array()) throw InvalidInput("\"clear\" must be a list of field names");
    for (const nlohmann::json& field : body["clear"]) {
      if (!field.is_string()) throw InvalidInput("\"clear\" must be a list of field names, not " + field.dump());
      change.clear.push_back(field.get<std::string>());
    }
  }
  if (!change.max_checks && !change.max_attempts && !change.backoff && !change.backoff_max && !change.timeout &&
      change.clear.empty()) {
    throw InvalidInput("nothing to set: give max_checks, max_attempts, backoff, backoff_max, timeout or clear");
  }
  return change;
}

// Declares a class (the Jobs page's form; `prescient jobs add CLASS [--worker]`): {"name": ..., "worker": true}
// for one run by workers in another language (docs/workers.md). A refusal (an empty or long name) is
// job_class_add's one line; a class already known is left as it is ("known").
// A class's policy (the Jobs page's form; `prescient jobs set`): a refusal is set_job_policy's one line.
void add_job_actions(httplib::Server& server, const std::shared_ptr<const ApiContext>& c) {
  server.Post("/api/jobs", serve(c->pool, [c](soci::session& db, const httplib::Request& request, httplib::Response& response) {
                const nlohmann::json body = body_of(request);
                if (!body.contains("name") || !body["name"].is_string()) {
                  throw InvalidInput("give the class as {\"name\": \"<class>\", \"worker\": true|false}");
                }
                if (body.contains("worker") && !body["worker"].is_boolean()) {
                  throw InvalidInput("\"worker\" must be true or false");
                }
                const std::string job = body["name"].get<std::string>();
                const bool worker = body.value("worker", false);
                const std::string status = add_job_class(db, job, worker, c->who(request), c->clock.now());
                log_action(c->who(request), "declared job class " + job + (worker ? " (run by workers)" : "") + ": " + status);
                send_json(response, {{"name", job}, {"worker", worker}, {"status", status}});
              }));
  server.Post("/api/jobs/(.+)/policy", serve(c->pool, [c](soci::session& db, const httplib::Request& request, httplib::Response& response) {
                const std::string job = request.matches[1].str();
                const JobPolicyChange change = policy_change_of(body_of(request));
                const JobClassRow row = set_job_policy(db, job, change, c->who(request), c->clock.now());
                log_action(c->who(request), "set the policy of job class " + job + ": " + to_json(row).dump());
                send_json(response, to_json(row));
              }));
}

void add_actions(httplib::Server& server, const std::shared_ptr<const ApiContext>& c) {
  add_job_actions(server, c);
  add_check_actions(server, c);
  add_dead_letter_actions(server, c);
  add_schedule_actions(server, c);
  add_limit_actions(server, c);
}

}  // namespace

void add_api_routes(httplib::Server& server, const ApiContext& context) {
  // The handlers outlive this call: they share one copy of the context.
  const auto shared = std::make_shared<const ApiContext>(context);
  add_reads(server, shared);
  if (!context.read_only) add_actions(server, shared);
}

}  // namespace prescient::web
