-- Which daemons are firing: each writes its row once per slot it completes (record_runner_seen,
-- sql/functions/077_runner_seen.sql), so the dashboard shows the runners seen in the last slots, and one
-- that stopped shows by falling behind.
CREATE TABLE prescient.runner_seen (
  runner_id text PRIMARY KEY,
  shard text NOT NULL,
  first_seen_at timestamptz NOT NULL,  -- its first slot since it was last forgotten (a week unseen)
  last_slot timestamptz NOT NULL,      -- the last slot it completed
  seen_at timestamptz NOT NULL,        -- when it completed it, by its own clock
  claimed bigint NOT NULL              -- checks it claimed in that slot
);

INSERT INTO prescient.role_grant (statement, added_by) VALUES
  ('GRANT SELECT ON prescient.runner_seen TO prescient_client, prescient_runner', 18),
  ('GRANT EXECUTE ON FUNCTION prescient.record_runner_seen(text, text, timestamptz, bigint, timestamptz)'
   ' TO prescient_runner', 18);
