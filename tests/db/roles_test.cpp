// The least-privilege roles of migration 0010, proven with login roles that hold only one of them.
#include <catch2/catch.hpp>
#include <soci/soci.h>

#include "builtin_jobs.hpp"
#include "prescient/client.hpp"
#include "prescient/flow_limits.hpp"
#include "prescient/retention.hpp"
#include "prescient/schedules.hpp"
#include "prescient/slot_runner.hpp"
#include "prescient/time_text.hpp"
#include "login_role.hpp"
#include "test_database.hpp"

using namespace prescient;
using namespace prescient::jobs;
using prescient::testing::connect_to;
using prescient::testing::create_migrated_database;
using prescient::testing::as_user;
using prescient::testing::denied;
using prescient::testing::Login;

namespace {

struct RolesFixture {
  std::string url = create_migrated_database(60);
  std::unique_ptr<soci::session> owner = connect_to(url);
  std::string suffix = [&] {
    std::string name;
    *owner << "SELECT current_database()", soci::into(name);
    return name;
  }();
  ManualClock clock{parse_time("2026-11-21T10:00:00Z")};
};

}  // namespace

TEST_CASE("prescient_client schedules, cancels and reads; it cannot claim, write tables or delete history") {
  RolesFixture f;
  Login login(*f.owner, "client_" + f.suffix, "prescient_client");
  auto db = connect_to(as_user(f.url, login.name));
  Client client(*db, {.clock = &f.clock});
  const auto kept = client.schedule({.job = "noop", .entity_name = "o", .entity_key = "1", .job_key = "kept",
                                     .at = parse_time("2026-11-21T11:00:00Z")});
  client.schedule({.job = "noop", .entity_name = "o", .entity_key = "2", .job_key = "gone", .at = parse_time("2026-11-21T11:00:00Z")});
  CHECK(client.cancel_job_key("gone").has_value());
  CHECK(client.reschedule_job_key("kept", parse_time("2026-11-21T12:00:00Z")).has_value());
  // Bulk: the client's arrays (schedule_arrays) and SQL's JSON (schedule_many).
  const std::vector<ScheduleRequest> bulk{
      {.job = "noop", .entity_name = "o", .entity_key = "3", .at = parse_time("2026-11-21T11:00:00Z")},
      {.job = "noop", .entity_name = "o", .entity_key = "4", .at = parse_time("2026-11-21T11:00:00Z")}};
  CHECK(client.schedule_many(bulk).size() == 2);
  *db << "SELECT count(*) FROM prescient.schedule_many("
         "'[{\"job\": \"noop\", \"entity_name\": \"o\", \"entity_key\": \"5\", \"at\": \"2026-11-21T11:00:00Z\"}]',"
         " p_now => '2026-11-21T10:00:00Z')";
  // Debounce and dedupe, in SQL as an application calls them: the debounce moves "kept", the dedupe finds
  // "gone" (cancelled) and schedules nothing.
  std::string status;
  *db << "SELECT status FROM prescient.schedule('noop', 'o', '1', '2026-11-21T11:30:00Z', 'kept',"
         " p_on_conflict => 'debounce', p_max_wait => '6h', p_now => '2026-11-21T10:00:00Z')", soci::into(status);
  CHECK(status == "debounced");
  *db << "SELECT status FROM prescient.schedule('noop', 'o', '2', '2026-11-21T11:30:00Z', 'gone',"
         " p_dedupe_for => '1 day', p_dedupe_outcomes => '{cancelled}', p_now => '2026-11-21T10:00:00Z')",
      soci::into(status);
  CHECK(status == "deduplicated");
  long long pending = 0, history = 0;
  *db << "SELECT count(*) FROM prescient.future_job", soci::into(pending);
  *db << "SELECT count(*) FROM prescient.job_history", soci::into(history);
  CHECK(pending == 4);
  CHECK(history == 1);
  std::string enqueued_by;
  *f.owner << "SELECT enqueued_by FROM prescient.future_job WHERE id = :id", soci::use(kept.id), soci::into(enqueued_by);
  CHECK(enqueued_by != "");

  CHECK(denied(*db, "SELECT id FROM prescient.future_job FOR UPDATE SKIP LOCKED"));  // a claim
  CHECK(denied(*db, "DELETE FROM prescient.job_history"));
  CHECK(denied(*db, "DELETE FROM prescient.future_job"));
  CHECK(denied(*db, "INSERT INTO prescient.future_job (job, entity_name, entity_key, first_check_at, next_check_at,"
                    " enqueued_on, enqueued_by) VALUES ('noop', 'o', '3', now(), now(), now(), 'x')"));
  CHECK(denied(*db, "UPDATE prescient.settings SET max_checks = 1"));
  CHECK(denied(*db, "INSERT INTO prescient.event (id, type, source, occurred_at, emitted_at, payload)"
                    " VALUES ('x', 't', 's', now(), now(), '{}')"));
  CHECK(denied(*db, "SELECT prescient.grant_roles()"));
}

TEST_CASE("prescient_runner fires slots, records history, events and schedules; it cannot drop or purge") {
  RolesFixture f;
  Registry registry;
  register_builtin_jobs(registry);
  Client owner_client(*f.owner, {.clock = &f.clock});
  for (int i = 0; i < 5; ++i) {
    owner_client.schedule({.job = "emit", .entity_name = "o", .entity_key = std::to_string(i),
                           .at = parse_time("2026-11-21T10:05:00Z"), .payload = {{"type", "t"}}});
  }
  Schedules(*f.owner, f.clock).add({.id = "minutely", .spec = "@every 5m"});

  Login login(*f.owner, "runner_" + f.suffix, "prescient_runner");
  const std::string runner_url = as_user(f.url, login.name);
  f.clock.set(parse_time("2026-11-21T10:05:00Z"));
  SlotRunner runner({.database_url = runner_url, .runner_id = "r", .workers = 2}, registry, f.clock);
  const SlotReport r = runner.run_slot(parse_time("2026-11-21T10:05:00Z"));
  CHECK(r.claimed == 6);
  CHECK(r.done == 5);
  CHECK(r.rescheduled == 1);  // the schedule's cron check, re-armed
  CHECK(r.failed == 0);
  CHECK(r.events == 6);
  // The occurrence it fired is recorded in the schedule's check, by the settlement.
  CHECK(format_time(*Schedules(*f.owner, f.clock).show("minutely").last_occurrence_at) == "2026-11-21T10:05:00Z");

  // It says it fired the slot (the dashboard's runners).
  runner.record_seen(parse_time("2026-11-21T10:05:00Z"), r.claimed);
  CHECK(prescient::testing::count_of(*f.owner, "SELECT claimed FROM prescient.runner_seen WHERE runner_id = 'r'") == 6);

  // It keeps the history partitions ahead (as the schema's owner, through the function), and drops none.
  CHECK(runner.ensure_history_partitions() == 0);  // migrate made them already
  auto db = connect_to(runner_url);
  *db << "SELECT prescient.ensure_history_partitions('2041-03-01T00:00:00Z'::timestamptz)";
  long long made = 0;
  *f.owner << "SELECT count(*) FROM prescient.history_partitions() WHERE name LIKE 'job_history_2041_%'", soci::into(made);
  CHECK(made == 4);
  CHECK(denied(*db, "SELECT prescient.drop_history_partition('job_history_2041_03')"));
  CHECK(denied(*db, "DROP TABLE prescient.job_history_2041_03"));
  CHECK(denied(*db, "SELECT prescient.purge_history_rows(now(), 10)"));
  CHECK(denied(*db, "SELECT prescient.purge_dead_letters(now(), 10)"));
  // So retention is the owner's: the daemon applies it only on a role that may drop (RetentionKeeper).
  CHECK_FALSE(may_drop_history(*db));
  CHECK(may_drop_history(*f.owner));
  CHECK(denied(*db, "DROP TABLE prescient.job_history"));
  CHECK(denied(*db, "TRUNCATE prescient.event"));
  CHECK(denied(*db, "DELETE FROM prescient.job_history"));
  CHECK(denied(*db, "DELETE FROM prescient.event"));
  CHECK(denied(*db, "UPDATE prescient.cron_schedule SET spec = '@every 1m'"));
  CHECK(denied(*db, "UPDATE prescient.settings SET max_checks = 1"));
}

TEST_CASE("prescient_runner applies flow limits; it cannot set or remove them") {
  RolesFixture f;
  Registry registry;
  register_builtin_jobs(registry);
  FlowLimits(*f.owner).set({.name = "one-at-a-time", .key = "payload.tenant", .rate = 1, .per_seconds = 60,
                            .concurrency = 1},
                           "owner", f.clock.now());
  FlowLimits(*f.owner).set({.name = "tenants", .key = "payload.tenant", .fair_share = true}, "owner", f.clock.now());
  Client owner_client(*f.owner, {.clock = &f.clock});
  for (int i = 0; i < 3; ++i) {
    owner_client.schedule({.job = "emit", .entity_name = "o", .entity_key = std::to_string(i),
                           .at = parse_time("2026-11-21T10:05:00Z"), .payload = {{"type", "t"}, {"tenant", "a"}}});
  }
  Login login(*f.owner, "runner_" + f.suffix, "prescient_runner");
  const std::string runner_url = as_user(f.url, login.name);
  f.clock.set(parse_time("2026-11-21T10:05:00Z"));
  SlotRunner runner({.database_url = runner_url, .runner_id = "r", .workers = 2}, registry, f.clock);
  const SlotReport r = runner.run_slot(parse_time("2026-11-21T10:05:00Z"));
  CHECK(r.done == 1);      // one a minute
  CHECK(r.deferred == 2);  // the others a minute and two later
  CHECK(prescient::testing::count_of(*f.owner, "SELECT count(*) FROM prescient.flow_deferral") == 2);
  auto db = connect_to(runner_url);
  CHECK(FlowLimits(*db).list().size() == 2);  // it reads them
  CHECK(denied(*db, "SELECT prescient.limit_set('x', 'job', 5)"));
  CHECK(denied(*db, "SELECT prescient.limit_remove('tenants')"));
  CHECK(denied(*db, "DELETE FROM prescient.flow_limit"));
}
