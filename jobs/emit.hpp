#pragma once
// emit: publishes the check's payload as an event (type: the payload's "type" if it is a string, else
// "emit") and finishes the check. The event is written in the same transaction as the settlement.
#include "prescient/job.hpp"

namespace prescient::jobs {

class EmitJob final : public JobExec {
 public:
  JobResult run(const Check& check, JobContext&) override {
    const auto type = check.payload.find("type");
    return {.next = std::nullopt,
            .events = {{.type = type != check.payload.end() && type->is_string() ? type->get<std::string>() : "emit",
                        .payload = check.payload}}};
  }
};

}  // namespace prescient::jobs
