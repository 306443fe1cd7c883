// The seeds' example as a plugin: "tell me when an order is still unshipped after X hours, look again at
// Y hours, then stop". Schedule one check per order X hours after it was placed:
//
//   prescient schedule --job order_unshipped --entity-name orders --entity-key 42 --in 3h
//                      --job-key order_unshipped:42 --payload '{"recheck_after": "2h"}'
//
// At each check it reads shop.orders (id bigint, shipped_at timestamptz) through the job context:
// shipped -> done; unshipped -> emits `order.unshipped`, then looks again `recheck_after` later (Y - X)
// on the first check, and stops after the second.
#include <soci/soci.h>

#include "prescient/duration.hpp"
#include "prescient/plugin.hpp"

namespace {

class OrderUnshipped final : public prescient::JobExec {
 public:
  prescient::JobPolicy policy() const override { return {.max_checks = 2}; }

  prescient::JobResult run(const prescient::Check& check, prescient::JobContext& ctx) override {
    int shipped = 0;
    soci::indicator found = soci::i_null;
    const long long order = std::stoll(check.entity_key);
    ctx.db() << "SELECT (shipped_at IS NOT NULL)::int FROM shop.orders WHERE id = :id", soci::use(order),
        soci::into(shipped, found);
    if (!ctx.db().got_data()) throw std::runtime_error("order " + check.entity_key + " does not exist");
    if (shipped != 0) return {};
    prescient::JobResult result;
    result.events.push_back({.type = "order.unshipped",
                             .payload = {{"order", order}, {"check", check.check_count + 1}}});
    if (check.check_count == 0) {
      const std::string after = check.payload.value("recheck_after", "2h");
      result.next = check.slot + prescient::parse_duration(after);
    }
    return result;
  }
};

}  // namespace

PRESCIENT_PLUGIN_ABI_EXPORT

extern "C" int prescient_register(prescient::Registry& registry) {
  registry.add("order_unshipped", [] { return std::make_unique<OrderUnshipped>(); });
  return 0;
}
