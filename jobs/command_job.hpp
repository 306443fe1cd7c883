#pragma once
// command: runs an executable from the allow-listed directory (the runner's --commands DIR; without
// one the class refuses every check), like `at`. payload: {"command": "name", "args": ["..."]}, where
// name is a plain file name in DIR. No shell; a scrubbed environment holding the check:
// PRESCIENT_CHECK_ID, PRESCIENT_JOB, PRESCIENT_ENTITY, PRESCIENT_ENTITY_KEY, PRESCIENT_JOB_KEY,
// PRESCIENT_PAYLOAD, PRESCIENT_CHECK_COUNT, PRESCIENT_SLOT, and PATH=/usr/local/bin:/usr/bin:/bin.
// Exit 0 with nothing on stdout: done; a time on stdout: look again then; a JSON object {"next": time or
// null, "result": any JSON}: the same with a result kept with the run; any other exit: a failure
// (its last stderr line is kept); still running at the timeout (even with its output closed): killed
// with its process group, a failure. Processes it leaves running in its group when it exits are killed.
// Long-running: it runs under a written lease, outside any transaction.
#include <optional>
#include <string>

#include "prescient/job.hpp"

namespace prescient::jobs {

class CommandJob final : public JobExec {
 public:
  explicit CommandJob(std::optional<std::string> allowed_dir) : allowed_dir_(std::move(allowed_dir)) {}
  JobPolicy policy() const override { return {.long_running = true}; }
  JobResult run(const Check& check, JobContext& ctx) override;

 private:
  std::optional<std::string> allowed_dir_;
};

}  // namespace prescient::jobs
