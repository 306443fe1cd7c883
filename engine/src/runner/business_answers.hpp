#pragma once
// Answers in business time ("look again in 4 working hours of calendar support-eu",
// JobResult::next_in_business_time) turned into times before the settlement, in one statement for the batch,
// by the rule every door uses (RunnerStore::business_due): the settle statement's judge stays inlined, with no
// calendar lookup a row (docs/business-time.md, "Answers in business time").
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "runner/runner_store.hpp"
#include "runner/settlements.hpp"

namespace prescient::runner {

// Sets `next` of each item that answered in business time, counted from `now`. Returns the items (by index)
// whose answer cannot be a time, each with the reason: the caller fails each alone.
std::vector<std::pair<std::size_t, std::string>> resolve_business_answers(std::vector<SettleItem>& items,
                                                                          RunnerStore& store, TimePoint now);

}  // namespace prescient::runner
