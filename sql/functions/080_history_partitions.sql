-- job_history is partitioned by month (of finished_at, in UTC), so that retention drops whole months
-- instead of deleting rows one by one (docs/operations.md, "Retention"; the table: sql/0013). So is the
-- timeline of runs, check_run (sql/0035): its months are the history's, made, dropped and purged with them.
-- * One partition per month, named job_history_YYYY_MM (and check_run_YYYY_MM), created ahead of time by
--   ensure_history_partitions(): by `prescient migrate`, the daemon (hourly) and run-slot/sweep.
-- * Retention (the daemon of the schema owner, by prescient.settings' retention; `prescient purge`) drops
--   the months wholly before its cut-off (drop_history_partition) and deletes the older rows of the month
--   it falls in (purge_history_rows). Dead letters (failed, never retried) are not among them: a dropped
--   month's move to the default partition, and only purge_dead_letters deletes them.
-- * job_history_default takes a row whose month has no partition yet (a runner never fails for want of
--   one); ensure_history_partitions() moves such rows into the month's partition when it creates it.

-- The partitions of every month from p_from's to p_through's (UTC), those that do not exist yet. Returns
-- how many it created. Rows of such a month waiting in job_history_default move into its partition.
-- Creating a partition as CREATE TABLE + ATTACH takes only a SHARE UPDATE EXCLUSIVE lock on
-- job_history (CREATE TABLE ... PARTITION OF would take ACCESS EXCLUSIVE and stop every settlement), and
-- an ACCESS EXCLUSIVE lock on job_history_default, which only rows without a partition wait for. A lock
-- not granted within 2 s fails the call (the caller tries again later) rather than queue settlements.
-- Runs as the schema owner, so that runners (prescient_runner) may call it.
CREATE OR REPLACE FUNCTION prescient.ensure_history_partitions(p_from timestamptz, p_through timestamptz)
  RETURNS integer LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  -- Month arithmetic on UTC wall time: on timestamptz it would follow the session's time zone.
  v_month timestamp := date_trunc('month', p_from AT TIME ZONE 'UTC');
  v_last constant timestamp := date_trunc('month', p_through AT TIME ZONE 'UTC');
  v_table text;
  v_name text;
  v_locked text[] := '{}';
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
    FOREACH v_table IN ARRAY ARRAY['job_history', 'check_run'] LOOP
      v_name := v_table || '_' || to_char(v_month, 'YYYY_MM');
      CONTINUE WHEN to_regclass('prescient.' || quote_ident(v_name)) IS NOT NULL;
      IF NOT v_table = ANY (v_locked) THEN
        PERFORM set_config('lock_timeout', '2s', true);
        -- Also serializes two callers: the second finds the partitions made when it gets the lock.
        EXECUTE format('LOCK TABLE prescient.%I IN ACCESS EXCLUSIVE MODE', v_table || '_default');
        v_locked := v_locked || v_table;
      END IF;
      CONTINUE WHEN to_regclass('prescient.' || quote_ident(v_name)) IS NOT NULL;
      EXECUTE format('CREATE TABLE prescient.%I (LIKE prescient.%I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)',
                     v_name, v_table);
      EXECUTE format('WITH moved AS (DELETE FROM prescient.%I'
                     '               WHERE finished_at >= $1 AND finished_at < $2 RETURNING *)'
                     ' INSERT INTO prescient.%I SELECT * FROM moved', v_table || '_default', v_name)
        USING v_month AT TIME ZONE 'UTC', (v_month + interval '1 month') AT TIME ZONE 'UTC';
      EXECUTE format('ALTER TABLE prescient.%I ATTACH PARTITION prescient.%I FOR VALUES FROM (%L) TO (%L)',
                     v_table, v_name, v_month AT TIME ZONE 'UTC', (v_month + interval '1 month') AT TIME ZONE 'UTC');
      IF v_table = 'job_history' THEN
        v_created := v_created + 1;
      END IF;
    END LOOP;
    v_month := v_month + interval '1 month';
  END LOOP;
  RETURN v_created;
END $$;
REVOKE EXECUTE ON FUNCTION prescient.ensure_history_partitions(timestamptz, timestamptz) FROM PUBLIC;

-- The partitions from p_now's month through that of three months later: what the daemon, run-slot,
-- sweep and migrate keep ready.
CREATE OR REPLACE FUNCTION prescient.ensure_history_partitions(p_now timestamptz) RETURNS integer
  LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
  RETURN prescient.ensure_history_partitions(p_now, p_now + interval '92 days');
REVOKE EXECUTE ON FUNCTION prescient.ensure_history_partitions(timestamptz) FROM PUBLIC;

-- The partitions of job_history with the months they hold; NULL bounds for the default partition.
-- Monthly partitions are recognised by their names (job_history_YYYY_MM), which only
-- ensure_history_partitions gives.
CREATE OR REPLACE FUNCTION prescient.history_partitions()
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

-- Retention, whole months: drops the monthly partition p_name of job_history (and the month's partition of
-- check_run) and returns how many history rows went. Its dead letters (failed, never retried) are kept: read
-- first, put back after the drop, into the default partition (no month holds them any more; only a
-- partition made again for that month would take them back). Rows are read before the drop, so
-- job_history is locked exclusively only for the drop itself; a lock not granted within 2 s fails the
-- call rather than queue settlements behind it. The default partition is locked first, as
-- ensure_history_partitions locks it before job_history: the same order, no deadlock between the two.
CREATE OR REPLACE FUNCTION prescient.drop_history_partition(p_name text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  v_month record;
  v_rows bigint;
  v_kept prescient.job_history[];
BEGIN
  SELECT p.starts_at, p.ends_at INTO v_month
    FROM prescient.history_partitions() p WHERE p.name = p_name AND p.starts_at IS NOT NULL;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = format('%L is not a monthly partition of job_history', p_name);
  END IF;
  EXECUTE format('SELECT count(*) FROM prescient.%I', p_name) INTO v_rows;
  -- Through the partial index job_history_dead_letter, pruned to the month.
  SELECT coalesce(array_agg(h), '{}') INTO v_kept FROM prescient.job_history h
   WHERE prescient.dead_letter(h.outcome, h.retried)
     AND h.finished_at >= v_month.starts_at AND h.finished_at < v_month.ends_at;
  PERFORM set_config('lock_timeout', '2s', true);
  LOCK TABLE prescient.job_history_default IN ROW EXCLUSIVE MODE;
  EXECUTE format('DROP TABLE prescient.%I', p_name);
  -- The month's runs go with it (the timeline of a check outlives no history of the same month).
  EXECUTE format('DROP TABLE IF EXISTS prescient.%I', 'check_run_' || substr(p_name, 13));
  INSERT INTO prescient.job_history SELECT * FROM unnest(v_kept);
  RETURN v_rows - cardinality(v_kept);
END $$;

-- Retention, row by row: deletes up to p_limit history rows finished before p_before from the
-- partitions that begin before it (the month the cut-off falls in, the default partition), dead letters
-- excepted, and returns how many. (The runs of check_run before it are purged apart, db/retention.cpp.)
-- Rows are found by their address within each partition, in the statement that deletes them.
CREATE OR REPLACE FUNCTION prescient.purge_history_rows(p_before timestamptz, p_limit integer) RETURNS bigint
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
                   '  SELECT ctid FROM prescient.%1$I WHERE finished_at < $1'
                   '     AND NOT prescient.dead_letter(outcome, retried) LIMIT $2)) RETURNING 1)'
                   ' SELECT count(*) FROM gone', v_name)
      INTO v_gone USING p_before, p_limit - v_total;
    v_total := v_total + v_gone;
  END LOOP;
  RETURN v_total;
END $$;

-- Retention of dead letters (settings.dead_letter_retention_seconds, or `purge --dead-letters`): deletes up
-- to p_limit failures never retried that finished before p_before, found through the partial index
-- job_history_dead_letter; returns how many.
CREATE OR REPLACE FUNCTION prescient.purge_dead_letters(p_before timestamptz, p_limit integer) RETURNS bigint
  LANGUAGE sql
  BEGIN ATOMIC
    WITH gone AS (
      DELETE FROM prescient.job_history h
       WHERE (h.tableoid, h.ctid) IN (SELECT d.tableoid, d.ctid FROM prescient.job_history d
                                       WHERE prescient.dead_letter(d.outcome, d.retried) AND d.finished_at < p_before
                                       LIMIT p_limit)
      RETURNING 1)
    SELECT count(*) FROM gone;
  END;
REVOKE EXECUTE ON FUNCTION prescient.drop_history_partition(text), prescient.purge_history_rows(timestamptz, integer),
  prescient.purge_dead_letters(timestamptz, integer) FROM PUBLIC;

-- Whether the session's role may drop history partitions (it owns job_history, or is a member of the role
-- that does): only such a role applies retention. Runners make partitions (ensure_history_partitions runs as
-- the owner) but may not drop them.
CREATE OR REPLACE FUNCTION prescient.may_drop_history() RETURNS boolean LANGUAGE sql STABLE
  BEGIN ATOMIC
    SELECT pg_catalog.pg_has_role(current_user, c.relowner, 'USAGE') FROM pg_catalog.pg_class c
     WHERE c.oid = 'prescient.job_history'::regclass;
  END;
