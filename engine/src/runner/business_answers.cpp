#include "runner/business_answers.hpp"

#include "prescient/errors.hpp"

namespace prescient::runner {

std::vector<std::pair<std::size_t, std::string>> resolve_business_answers(std::vector<SettleItem>& items,
                                                                          RunnerStore& store, TimePoint now) {
  std::vector<std::size_t> asking;
  std::vector<BusinessDelay> asked;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (items[i].answer.failed || !items[i].answer.in_business_time) continue;
    asking.push_back(i);
    asked.push_back(*items[i].answer.in_business_time);
  }
  std::vector<std::pair<std::size_t, std::string>> failures;
  if (asked.empty()) return failures;
  const std::vector<RunnerStore::BusinessDue> due = store.business_due(asked, now);
  if (due.size() != asked.size()) {
    throw DatabaseError("business time: " + std::to_string(due.size()) + " answers for " +
                        std::to_string(asked.size()) + " asked");
  }
  for (std::size_t k = 0; k < asking.size(); ++k) {
    RunOutcome& answer = items[asking[k]].answer;
    if (due[k].at) {
      answer.next = due[k].at;
      answer.in_business_time.reset();
      items[asking[k]].timed_by = SettleItem::BusinessTimed{
          .calendar = asked[k].calendar, .delay = asked[k].delay, .version = due[k].calendar_version.value_or(0)};
    } else {
      failures.emplace_back(asking[k], "its answer in business time (" + asked[k].delay + " of calendar " +
                                           asked[k].calendar + "): " + due[k].problem.value_or("no time"));
    }
  }
  return failures;
}

}  // namespace prescient::runner
