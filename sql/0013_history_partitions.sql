-- 0013: job_history is partitioned by month (of finished_at, in UTC), so that retention drops whole
-- months instead of deleting rows one by one (docs/operations.md, "Retention").
-- * One partition per month, named job_history_YYYY_MM, created ahead of time by
--   prescient.ensure_history_partitions(): here for the months the existing history covers and the
--   next three, then by `prescient migrate`, the daemon (hourly) and run-slot/sweep.
-- * `prescient purge --history` drops the months wholly before its cut-off
--   (drop_history_partition) and deletes the older rows of the month it falls in
--   (purge_history_rows).
-- * job_history_default takes a row whose month has no partition yet (a runner never fails for want of
--   one); ensure_history_partitions() moves such rows into the month's partition when it creates it.
-- * A partitioned table can only have unique indexes that include finished_at, and nothing needs one:
--   history_id comes from a sequence, and (id, history_id) is an ordinary index for the trace of a check.
-- The existing rows are copied into the new table: migrating a large history takes a while (about a
-- minute per 10 million rows on the benchmark machine); purge what you do not keep before migrating.

ALTER TABLE prescient.job_history RENAME TO job_history_unpartitioned;

CREATE SEQUENCE prescient.job_history_seq;
SELECT setval('prescient.job_history_seq', coalesce(max(history_id), 0) + 1, false)
  FROM prescient.job_history_unpartitioned;

CREATE TABLE prescient.job_history (
  history_id bigint NOT NULL DEFAULT nextval('prescient.job_history_seq'),
  id bigint NOT NULL,
  job text NOT NULL,
  entity_name text NOT NULL,
  entity_key text NOT NULL,
  job_key text,
  group_key text,
  payload jsonb NOT NULL,
  first_check_at timestamptz NOT NULL,
  last_check_at timestamptz NOT NULL,
  check_count integer NOT NULL,
  attempts integer NOT NULL,
  last_error text,
  enqueued_on timestamptz NOT NULL,
  enqueued_by text NOT NULL,
  finished_at timestamptz NOT NULL,
  finished_by text NOT NULL,
  outcome text NOT NULL CONSTRAINT job_history_outcome_check
    CHECK (outcome IN ('done', 'cancelled', 'failed', 'guard_max_checks', 'guard_past', 'guard_horizon',
                       'deadline_missed')),
  run_micros bigint CONSTRAINT job_history_run_micros_check CHECK (run_micros >= 0)
) PARTITION BY RANGE (finished_at);
CREATE TABLE prescient.job_history_default PARTITION OF prescient.job_history DEFAULT;

-- The partitions of every month from p_from's to p_through's (UTC), those that do not exist yet. Returns
-- how many it created. Rows of such a month waiting in job_history_default move into its partition.
-- Creating a partition as CREATE TABLE + ATTACH takes only a SHARE UPDATE EXCLUSIVE lock on
-- job_history (CREATE TABLE ... PARTITION OF would take ACCESS EXCLUSIVE and stop every settlement), and
-- an ACCESS EXCLUSIVE lock on job_history_default, which only rows without a partition wait for. A lock
-- not granted within 2 s fails the call (the caller tries again later) rather than queue settlements.
-- Runs as the schema owner, so that runners (prescient_runner) may call it.
CREATE FUNCTION prescient.ensure_history_partitions(p_from timestamptz, p_through timestamptz)
  RETURNS integer LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  -- Month arithmetic on UTC wall time: on timestamptz it would follow the session's time zone.
  v_month timestamp := date_trunc('month', p_from AT TIME ZONE 'UTC');
  v_last constant timestamp := date_trunc('month', p_through AT TIME ZONE 'UTC');
  v_name text;
  v_locked boolean := false;
  v_created integer := 0;
BEGIN
  IF p_from IS NULL OR p_through IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = 'ensure_history_partitions needs both months';
  END IF;
  IF v_last > v_month + interval '100 years' THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400',
      MESSAGE = format('refusing to create more than 100 years of history partitions (%s to %s)',
                       prescient.iso(p_from), prescient.iso(p_through));
  END IF;
  WHILE v_month <= v_last LOOP
    v_name := 'job_history_' || to_char(v_month, 'YYYY_MM');
    IF to_regclass('prescient.' || quote_ident(v_name)) IS NULL THEN
      IF NOT v_locked THEN
        PERFORM set_config('lock_timeout', '2s', true);
        -- Also serializes two callers: the second finds the partitions made when it gets the lock.
        LOCK TABLE prescient.job_history_default IN ACCESS EXCLUSIVE MODE;
        v_locked := true;
      END IF;
      IF to_regclass('prescient.' || quote_ident(v_name)) IS NULL THEN
        EXECUTE format('CREATE TABLE prescient.%I (LIKE prescient.job_history INCLUDING DEFAULTS INCLUDING CONSTRAINTS)',
                       v_name);
        EXECUTE format('WITH moved AS (DELETE FROM prescient.job_history_default'
                       '               WHERE finished_at >= $1 AND finished_at < $2 RETURNING *)'
                       ' INSERT INTO prescient.%I SELECT * FROM moved', v_name)
          USING v_month AT TIME ZONE 'UTC', (v_month + interval '1 month') AT TIME ZONE 'UTC';
        EXECUTE format('ALTER TABLE prescient.job_history ATTACH PARTITION prescient.%I FOR VALUES FROM (%L) TO (%L)',
                       v_name, v_month AT TIME ZONE 'UTC', (v_month + interval '1 month') AT TIME ZONE 'UTC');
        v_created := v_created + 1;
      END IF;
    END IF;
    v_month := v_month + interval '1 month';
  END LOOP;
  RETURN v_created;
END $$;
REVOKE EXECUTE ON FUNCTION prescient.ensure_history_partitions(timestamptz, timestamptz) FROM PUBLIC;

-- The partitions from p_now's month through that of three months later: what the daemon, run-slot,
-- sweep and migrate keep ready.
CREATE FUNCTION prescient.ensure_history_partitions(p_now timestamptz) RETURNS integer
  LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
  RETURN prescient.ensure_history_partitions(p_now, p_now + interval '92 days');
REVOKE EXECUTE ON FUNCTION prescient.ensure_history_partitions(timestamptz) FROM PUBLIC;

-- The partitions of job_history with the months they hold; NULL bounds for the default partition.
-- Monthly partitions are recognised by their names (job_history_YYYY_MM), which only
-- ensure_history_partitions gives.
CREATE FUNCTION prescient.history_partitions()
  RETURNS TABLE (name text, starts_at timestamptz, ends_at timestamptz) LANGUAGE sql STABLE
  BEGIN ATOMIC
    SELECT p.name, p.month AT TIME ZONE 'UTC', (p.month + interval '1 month') AT TIME ZONE 'UTC'
      FROM (SELECT c.relname::text AS name,
                   CASE WHEN c.relname ~ '^job_history_[0-9]{4}_[0-9]{2}$'
                        THEN to_date(substr(c.relname, 13), 'YYYY_MM')::timestamp END AS month
              FROM pg_catalog.pg_inherits i JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid
             WHERE i.inhparent = 'prescient.job_history'::regclass) p
     ORDER BY p.month NULLS LAST;
  END;

-- Retention, whole months: drops the monthly partition p_name of job_history and returns how many rows
-- it held. Its rows are counted before the drop, so job_history is locked exclusively only for the
-- drop itself; a lock not granted within 2 s fails the call rather than queue settlements behind it.
CREATE FUNCTION prescient.drop_history_partition(p_name text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  v_rows bigint;
BEGIN
  IF NOT EXISTS (SELECT FROM prescient.history_partitions() p WHERE p.name = p_name AND p.starts_at IS NOT NULL) THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = format('%L is not a monthly partition of job_history', p_name);
  END IF;
  EXECUTE format('SELECT count(*) FROM prescient.%I', p_name) INTO v_rows;
  PERFORM set_config('lock_timeout', '2s', true);
  EXECUTE format('DROP TABLE prescient.%I', p_name);
  RETURN v_rows;
END $$;

-- Retention, row by row: deletes up to p_limit history rows finished before p_before from the
-- partitions that begin before it (the month the cut-off falls in, the default partition), and
-- returns how many. Rows are found by their address within each partition: history rows are never
-- updated, so an address found here is still that row.
CREATE FUNCTION prescient.purge_history_rows(p_before timestamptz, p_limit integer) RETURNS bigint
  LANGUAGE plpgsql AS $$
DECLARE
  v_name text;
  v_gone bigint;
  v_total bigint := 0;
BEGIN
  FOR v_name IN SELECT p.name FROM prescient.history_partitions() p WHERE p.starts_at IS NULL OR p.starts_at < p_before
  LOOP
    EXIT WHEN v_total >= p_limit;
    EXECUTE format('WITH gone AS (DELETE FROM prescient.%1$I WHERE ctid = ANY (ARRAY('
                   '  SELECT ctid FROM prescient.%1$I WHERE finished_at < $1 LIMIT $2)) RETURNING 1)'
                   ' SELECT count(*) FROM gone', v_name)
      INTO v_gone USING p_before, p_limit - v_total;
    v_total := v_total + v_gone;
  END LOOP;
  RETURN v_total;
END $$;
REVOKE EXECUTE ON FUNCTION prescient.drop_history_partition(text), prescient.purge_history_rows(timestamptz, integer)
  FROM PUBLIC;

SELECT prescient.ensure_history_partitions(coalesce(min(finished_at), now()), now() + interval '3 months')
  FROM prescient.job_history_unpartitioned;
INSERT INTO prescient.job_history (history_id, id, job, entity_name, entity_key, job_key, group_key, payload,
                                   first_check_at, last_check_at, check_count, attempts, last_error, enqueued_on,
                                   enqueued_by, finished_at, finished_by, outcome, run_micros)
  SELECT history_id, id, job, entity_name, entity_key, job_key, group_key, payload, first_check_at, last_check_at,
         check_count, attempts, last_error, enqueued_on, enqueued_by, finished_at, finished_by, outcome, run_micros
    FROM prescient.job_history_unpartitioned;
DROP TABLE prescient.job_history_unpartitioned;  -- and its identity sequence
ALTER SEQUENCE prescient.job_history_seq RENAME TO job_history_history_id_seq;
ALTER SEQUENCE prescient.job_history_history_id_seq OWNED BY prescient.job_history.history_id;

-- The indexes of 0008, built after the copy (each partition gets its own).
CREATE INDEX job_history_id ON prescient.job_history (id, history_id);
CREATE INDEX job_history_job_key ON prescient.job_history (job_key) WHERE job_key IS NOT NULL;
CREATE INDEX job_history_entity ON prescient.job_history (entity_name, entity_key);
CREATE INDEX job_history_finished_at ON prescient.job_history (finished_at);

-- Runners keep the partitions ahead; the new job_history gets the grants of the one it replaces.
INSERT INTO prescient.role_grant (statement, added_by) VALUES
  ('GRANT EXECUTE ON FUNCTION prescient.ensure_history_partitions(timestamptz, timestamptz),'
   ' prescient.ensure_history_partitions(timestamptz) TO prescient_runner', 13);
SELECT prescient.regrant_roles();
