-- 0048: the worker protocol as a trust boundary (docs/workers.md, "What a worker may do"). A worker is code
-- the schema owner does not control; each of its calls is checked here, whatever it sends:
--  - the clock is the server's: a worker's p_now is refused unless the schema owner lets workers pin it,
--    in a test database (prescient.settings.workers_may_pin_clock; the roles may not write settings);
--  - a lease token is a secret of the worker it was given to: prescient_client (and so prescient_worker)
--    may read every column of future_job but claim_token, and a settlement, heartbeat or release names
--    the worker, which must be the lease's holder (never the database session: a reconnect, a pooler or a
--    failover keeps a good settlement good);
--  - the settlement functions take the worker's name first: the old signatures go.
ALTER TABLE prescient.settings ADD COLUMN workers_may_pin_clock boolean NOT NULL DEFAULT false;

DROP FUNCTION IF EXISTS prescient.worker_complete(bigint[], bigint[], timestamptz[], jsonb[], timestamptz);
DROP FUNCTION IF EXISTS prescient.worker_fail(bigint[], bigint[], text[], timestamptz);
DROP FUNCTION IF EXISTS prescient.worker_extend(bigint[], bigint[], double precision, timestamptz);
DROP FUNCTION IF EXISTS prescient.worker_release(bigint[], bigint[]);
DROP FUNCTION IF EXISTS prescient.worker_settle(bigint[], bigint[], boolean, timestamptz[], text[], jsonb[],
                                                timestamptz);
DROP FUNCTION IF EXISTS prescient.worker_settle_together(bigint[], bigint[], boolean, timestamptz[], text[],
                                                         jsonb[], timestamptz);
DROP FUNCTION IF EXISTS prescient.lease_refusal(bigint, bigint, timestamptz);

UPDATE prescient.role_grant
   SET statement = replace(replace(replace(replace(statement,
         'prescient.worker_complete(bigint[], bigint[], timestamptz[], jsonb[], timestamptz)',
         'prescient.worker_complete(text, bigint[], bigint[], timestamptz[], jsonb[], timestamptz)'),
         'prescient.worker_fail(bigint[], bigint[], text[], timestamptz)',
         'prescient.worker_fail(text, bigint[], bigint[], text[], timestamptz)'),
         'prescient.worker_extend(bigint[], bigint[], double precision, timestamptz)',
         'prescient.worker_extend(text, bigint[], bigint[], double precision, timestamptz)'),
         'prescient.worker_release(bigint[], bigint[])',
         'prescient.worker_release(text, bigint[], bigint[])')
 WHERE added_by = 38 AND statement LIKE 'GRANT EXECUTE ON FUNCTION prescient.worker_take(%';

-- future_job leaves the client's table-wide SELECT: the runner keeps it (its leased path matches tokens),
-- the client gets every column but the token, by a function that reads the columns from the catalog, so a
-- column added later is readable without another grant (sql/functions/090_roles.sql).
UPDATE prescient.role_grant
   SET statement = replace(statement, ' prescient.future_job,', '')
 WHERE added_by = 10 AND statement LIKE 'GRANT SELECT ON prescient.settings,%';
INSERT INTO prescient.role_grant (statement, added_by) VALUES
  ('GRANT SELECT ON prescient.future_job TO prescient_runner', 48),
  ('SELECT prescient.grant_check_columns_but_the_token()', 48);
