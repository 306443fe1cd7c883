-- 0041: `cron trigger` (docs/schedules.md, "Trigger"): prescient.cron_trigger fires one occurrence of a
-- schedule now, with an id of its own, through a check of class cron; prescient_client may call it.
INSERT INTO prescient.role_grant (statement, added_by) VALUES
  ('GRANT EXECUTE ON FUNCTION prescient.cron_trigger(text, text, timestamptz) TO prescient_client', 41);
