-- 0030: the roles may read which function files a database has applied. Every command but migrate
-- compares them with its own before it starts (require_current_schema), and without this grant a login
-- holding only prescient_client or prescient_runner could run no command of the CLI: a daemon run as the
-- runners' login stopped at its start. (migrate makes the table after the numbered files and grants the
-- rows of role_grant after both, so the grant finds it.)
INSERT INTO prescient.role_grant (statement, added_by) VALUES
  ('GRANT SELECT ON prescient.schema_functions TO prescient_client, prescient_runner', 30);
