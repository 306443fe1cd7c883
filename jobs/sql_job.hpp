#pragma once
// sql: calls the application's SQL function named in payload.function ("app.check_order") with the
// check's entity key, payload and check count, under the class timeout as statement_timeout; the
// function returns the next time (timestamptz) or NULL (done), or jsonb {"next": ..., "result": ...} to
// keep a result with the run (sql/functions/070_sql_class.sql). It runs in its own short transaction
// on the job context's session, so what it writes commits on its own, before the settlement.
#include "prescient/job.hpp"

namespace prescient::jobs {

class SqlJob final : public JobExec {
 public:
  JobResult run(const Check& check, JobContext& ctx) override;
};

}  // namespace prescient::jobs
