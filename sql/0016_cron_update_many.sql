-- Bulk update of schedules from any language (sql/functions/045_cron.sql: cron_update_many).
INSERT INTO prescient.role_grant (statement, added_by) VALUES
  ('GRANT EXECUTE ON FUNCTION prescient.cron_update_many(jsonb, timestamptz) TO prescient_client, prescient_runner',
   16);
