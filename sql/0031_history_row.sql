-- 0031: the history row is made in one place, prescient.history_row (sql/functions/035_history_row.sql),
-- and an occurrence's row that never was a pending check through prescient.cron_occurrence_history (047).
-- Both are the runner's: its settlement, the overlap policy and a missed deadline write history with its
-- rights (cancel runs as the schema's owner). Nothing else calls them, so PUBLIC may not (the function files
-- revoke it).
INSERT INTO prescient.role_grant (statement, added_by) VALUES
  ('GRANT EXECUTE ON FUNCTION prescient.history_row(prescient.future_job, text, timestamptz, text, integer, integer,'
   ' text, bigint, jsonb), prescient.cron_occurrence_history(bigint, text, text, text, jsonb, timestamptz,'
   ' timestamptz, integer, text, text, timestamptz) TO prescient_runner', 31);
