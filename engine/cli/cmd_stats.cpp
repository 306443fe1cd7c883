#include <nlohmann/json.hpp>
#include <soci/soci.h>

#include <algorithm>
#include <iomanip>
#include <iostream>

#include "check_options.hpp"
#include "command.hpp"
#include "health_text.hpp"
#include "prescient/clock.hpp"
#include "prescient/errors.hpp"
#include "prescient/queue_stats.hpp"
#include "prescient/time_text.hpp"

namespace prescient::cli {
namespace {

std::string by_outcome(const std::map<Outcome, long long>& counts) {
  if (counts.empty()) return "none";
  std::string out;
  for (const auto& [outcome, n] : counts) {
    out.append(out.empty() ? "" : ", ").append(to_string(outcome)).append(" ").append(std::to_string(n));
  }
  return out;
}

void print_text(const QueueStats& s) {
  const auto age = std::chrono::duration_cast<std::chrono::seconds>(s.now - s.counted_at);
  std::cout << "counted        " << format_time(s.counted_at) << "   (" << age.count() << " s ago, in "
            << s.count_millis << " ms; the oldest overdue, the paused classes and the deferrals are live)\n"
            << "pending        " << s.pending << "\n"
            << "due now        " << s.due_now << "   (slot " << format_time(s.current_slot) << " and before)\n"
            << "overdue        " << s.overdue;
  if (s.oldest_overdue) {
    std::cout << "   (oldest: check " << s.oldest_overdue->id << ", " << s.oldest_overdue->job << ", due "
              << format_time(s.oldest_overdue->next_check_at) << ")";
  }
  for (const auto& p : s.paused) {
    std::cout << "\npaused class   " << p.job << ": " << p.pending << " pending, paused " << format_time(p.paused_at)
              << " by " << p.paused_by;
  }
  for (const auto& d : s.deferrals) {
    std::cout << "\ndeferred       " << d.deferred << " by limit " << d.limit_name << " for " << d.key_value
              << ", last " << format_time(d.last_deferred_at);
  }
  std::cout << "\ndead letters   " << s.dead_letters << "   (failed in the last 30 days, not retried)\n"
            << "last hour      " << by_outcome(s.finished_last_hour) << "\n"
            << "last day       " << by_outcome(s.finished_last_day) << "\n"
            << "next slots\n";
  long long most = 1;
  for (const auto& slot : s.next_slots) most = std::max(most, slot.checks);
  for (const auto& slot : s.next_slots) {
    const auto bar = static_cast<std::size_t>((slot.checks * 40 + most - 1) / most);
    std::cout << "  " << format_time(slot.slot) << " " << std::setw(10) << slot.checks << " " << std::string(bar, '#')
              << "\n";
  }
}

}  // namespace

Command stats_command() {
  return {
      .name = "stats",
      .summary = "The queue at a glance: pending, due, overdue, the next slots, recent outcomes, dead letters; and "
                 "the database's health, read on the primary even with --read-db: who holds back the horizon, dead "
                 "tuples per table (`doctor` judges them).",
      .usage = "stats [--slots N] [--fresh | --read-db URL] [--json]",
      .add_options =
          [](po::options_description& desc) {
            add_read_db_option(desc);
            desc.add_options()("slots", po::value<int>()->default_value(12)->value_name("N"),
                               "how many slots after the current one to count (1 to 1000)")(
                "fresh", "count now: without it, the figures daemons count in the background are shown when they "
                "are less than a minute old and no check was enqueued since")(
                "json", "print one JSON object");
          },
      .run =
          [](const Invocation& in) {
            const int slots = in.get<int>("slots");
            if (slots < 1 || slots > 1000) {
              in.refuse("slots", "--slots must be between 1 and 1000, not " + std::to_string(slots));
            }
            if (in.has("fresh") && in.reads_from_replica()) {
              throw InvalidInput("--fresh counts on the primary, which a replica cannot: leave out --read-db "
                                 "(or PRESCIENT_READ_DATABASE_URL) to count now");
            }
            auto db = in.connect_for_reading();
            // A replica cannot count: it shows the figures the daemons counted on the primary, as replicated.
            const Micros max_age = in.has("fresh") ? Micros{0} : in.reads_from_replica() ? Micros::max() : kFiguresMaxAge;
            const QueueStats stats = [&] {
              try {
                return queue_stats(*db, SystemClock().now(), slots, max_age);
              } catch (const DatabaseError& e) {
                // 25006: read-only transaction. A replica's figures were never counted on the primary.
                if (e.sqlstate() != "25006") throw;
                throw DatabaseError("the replica has no queue figures yet: daemons count them on the primary (or "
                                    "`prescient stats --fresh` there) and they replicate: " + std::string(e.what()),
                                    e.sqlstate());
              }
            }();
            // The health is the primary's, read there even when the queue's figures come from a replica; a
            // primary out of reach is said, and the replica's figures still shown.
            std::optional<DatabaseHealth> health;
            std::string health_error;
            try {
              health = read_primary_health(in, *db);
            } catch (const std::exception& e) {
              health_error = "cannot read the database's health on the primary (--db): " + std::string(e.what());
            }
            if (in.json()) {
              nlohmann::json out = to_json(stats);
              out["health"] = health ? to_json(*health) : nlohmann::json{{"error", health_error}};
              std::cout << out << "\n";
            } else {
              print_text(stats);
              if (health) print_health(std::cout, *health, 5);
              else std::cout << "health         " << health_error << "\n";
            }
            return kOk;
          },
  };
}

}  // namespace prescient::cli
