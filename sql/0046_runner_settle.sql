-- 0046: the runner's settlement in the server (sql/functions/073_runner_settle.sql): runner_settle settles a
-- batch, and finds a check the database refuses in chunks and halves, each under a subtransaction, without
-- a round trip per attempt. The runner calls it instead of sending the settle statement itself.
INSERT INTO prescient.role_grant (statement, added_by) VALUES
  ('GRANT EXECUTE ON FUNCTION prescient.runner_settle_together(bigint[], text[], timestamptz[], bigint[], text[],'
   ' text[], bigint[], text[], timestamptz[], timestamptz[], bigint[], bigint[], bigint[], bigint[], bigint[],'
   ' bigint[], bigint[], bigint[], bigint[], bigint[], bigint, integer, bigint, timestamptz, text, text[], text[],'
   ' text[], bigint[], text[], bigint[], text[]),'
   ' prescient.runner_settle(bigint[], text[], timestamptz[], bigint[], text[], text[], bigint[], text[],'
   ' timestamptz[], timestamptz[], bigint[], bigint[], bigint[], bigint[], bigint[], bigint[], bigint[], bigint[],'
   ' bigint[], bigint[], bigint, integer, bigint, bigint, text, text[], text[], text[], bigint[], text[], bigint[],'
   ' text[], boolean) TO prescient_runner', 46);
