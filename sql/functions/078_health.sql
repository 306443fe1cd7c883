-- What keeps prescient's tables healthy on a shared database, read for `prescient stats`, `prescient
-- doctor`, the daemons' /metrics and the dashboard's Health page (docs/operations.md, "Health"): who holds
-- back the MVCC horizon (so vacuum cannot reclaim the dead row versions claims and settlements leave), the
-- dead tuples and last (auto)vacuum of each table, and the backlog.
--
-- Every function here runs with the caller's rights (SECURITY INVOKER, the default), so it shows exactly what
-- the statistics views show the caller: PUBLIC may call them as it may read those views. A role without
-- pg_read_all_stats (granted by pg_monitor) sees another role's sessions with their pid, application,
-- backend_xmin and backend_xid, but with no state, query or start times: details_hidden says so, and nothing
-- fails. A SECURITY DEFINER function would show the schema owner's view to every caller instead.

-- Whether the caller sees every session's details (state, query, start times) in pg_stat_activity and
-- pg_stat_replication: the privileges of pg_read_all_stats, which pg_monitor holds (superusers have them).
CREATE OR REPLACE FUNCTION prescient.sees_all_sessions() RETURNS boolean
  LANGUAGE sql STABLE
  RETURN pg_has_role(current_user, 'pg_read_all_stats', 'USAGE');

-- Everything that holds an xmin back on the primary, oldest first: a vacuum of prescient's tables cannot remove
-- a row version deleted after it. holds_tables is false for a logical slot's catalog_xmin, which holds back the
-- system catalogs only (listed: a forgotten logical slot also keeps WAL). Read on a replica, it shows the
-- replica's own sessions, not the primary's: the callers connect to the primary (docs/operations.md).
--   kind: 'session' (a backend of this database, autovacuum included), 'standby' (a walsender's xmin: a
--   standby's hot_standby_feedback), 'replication_slot', 'replication_slot_catalog', 'prepared_transaction'.
--   holder: the slot's name or the prepared transaction's gid (null for sessions and standbys).
--   xid_age: transactions between the held xmin and the next one; held_since: since when, where known (a
--   session's transaction start, a prepared transaction's prepare; null for slots and standbys, and for a
--   session whose details are hidden).
CREATE OR REPLACE FUNCTION prescient.horizon_holders()
  RETURNS TABLE (kind text, pid integer, holder text, role_name text, application_name text, state text,
                 backend_type text, xact_start timestamptz, query_start timestamptz, held_xmin xid, xid_age integer,
                 held_since timestamptz, holds_tables boolean, details_hidden boolean)
  LANGUAGE sql STABLE AS $$
  SELECT * FROM (
    -- A session holds its snapshot's xmin, or its own xid when it has written and holds no snapshot (an idle
    -- transaction at READ COMMITTED); sessions of other databases hold back only their own database.
    SELECT CASE WHEN a.backend_type = 'walsender' THEN 'standby' ELSE 'session' END AS kind, a.pid,
           NULL::text AS holder, a.usename::text AS role_name, a.application_name, a.state, a.backend_type,
           a.xact_start, a.query_start, h.xmin AS held_xmin, age(h.xmin) AS xid_age,
           CASE WHEN a.backend_type = 'walsender' THEN NULL ELSE a.xact_start END AS held_since, true AS holds_tables,
           -- As pg_stat_activity decides: the caller's own roles' sessions, or every one with pg_read_all_stats.
           NOT (prescient.sees_all_sessions() OR coalesce(pg_has_role(a.usesysid, 'USAGE'), false)) AS details_hidden
      FROM pg_stat_activity a
      CROSS JOIN LATERAL (SELECT CASE WHEN a.backend_xid IS NULL THEN a.backend_xmin
                                      WHEN a.backend_xmin IS NULL THEN a.backend_xid
                                      WHEN age(a.backend_xid) > age(a.backend_xmin) THEN a.backend_xid
                                      ELSE a.backend_xmin END) AS h(xmin)
     WHERE h.xmin IS NOT NULL AND a.pid <> pg_backend_pid()
       AND (a.datname = current_database() OR a.backend_type = 'walsender')
    UNION ALL
    SELECT 'replication_slot', s.active_pid, s.slot_name::text, NULL, NULL,
           CASE WHEN s.active THEN 'active' ELSE 'inactive' END, s.slot_type, NULL, NULL, s.xmin, age(s.xmin), NULL,
           true, false
      FROM pg_replication_slots s WHERE s.xmin IS NOT NULL
    UNION ALL
    SELECT 'replication_slot_catalog', s.active_pid, s.slot_name::text, NULL, NULL,
           CASE WHEN s.active THEN 'active' ELSE 'inactive' END, s.slot_type, NULL, NULL, s.catalog_xmin,
           age(s.catalog_xmin), NULL, false, false
      FROM pg_replication_slots s WHERE s.catalog_xmin IS NOT NULL
    UNION ALL
    SELECT 'prepared_transaction', NULL, p.gid, p.owner::text, NULL, 'prepared', NULL, NULL, NULL, p.transaction,
           age(p.transaction), p.prepared, true, false
      FROM pg_prepared_xacts p WHERE p.database = current_database()
  ) AS holders
  ORDER BY xid_age DESC, held_since NULLS LAST, pid
$$;

-- Each table of prescient's (history partitions included): its live and dead tuples, and when it was last
-- vacuumed and analysed, by autovacuum and by hand. vacuum_trigger is the dead tuples at which autovacuum takes
-- it (autovacuum_vacuum_threshold + autovacuum_vacuum_scale_factor × its tuples, the table's own settings over
-- the server's); autovacuum_enabled is false when autovacuum is off for it or for the server.
CREATE OR REPLACE FUNCTION prescient.table_vacuum()
  RETURNS TABLE (table_name text, live_tuples bigint, dead_tuples bigint, vacuum_trigger bigint,
                 autovacuum_enabled boolean, last_autovacuum timestamptz, last_vacuum timestamptz,
                 last_autoanalyze timestamptz, last_analyze timestamptz, autovacuum_count bigint)
  LANGUAGE sql STABLE AS $$
  SELECT t.relname::text, t.n_live_tup, t.n_dead_tup,
         (coalesce(o.threshold, current_setting('autovacuum_vacuum_threshold')::float8)
          + coalesce(o.scale_factor, current_setting('autovacuum_vacuum_scale_factor')::float8)
            * greatest(c.reltuples, 0))::bigint,
         current_setting('autovacuum')::boolean AND coalesce(o.enabled, true),
         t.last_autovacuum, t.last_vacuum, t.last_autoanalyze, t.last_analyze, t.autovacuum_count
    FROM pg_stat_user_tables t
    JOIN pg_class c ON c.oid = t.relid
    CROSS JOIN LATERAL (
      SELECT max(option_value) FILTER (WHERE option_name = 'autovacuum_vacuum_threshold')::float8,
             max(option_value) FILTER (WHERE option_name = 'autovacuum_vacuum_scale_factor')::float8,
             max(option_value) FILTER (WHERE option_name = 'autovacuum_enabled')::boolean
        FROM pg_options_to_table(c.reloptions)) AS o(threshold, scale_factor, enabled)
   WHERE t.schemaname = 'prescient'
   ORDER BY t.n_dead_tup DESC, t.relname
$$;

-- The backlog: checks due at a slot before the current one and not yet run, as the queue figures counted them
-- (sql/functions/075_queue_figures.sql, at most a minute old: counted_at), and the live due time of the oldest
-- such check (one probe of the due index; null when none is overdue now).
CREATE OR REPLACE FUNCTION prescient.backlog(p_now timestamptz DEFAULT now())
  RETURNS TABLE (overdue bigint, counted_at timestamptz, oldest_due_at timestamptz)
  LANGUAGE sql STABLE AS $$
  SELECT (SELECT f.overdue FROM prescient.queue_figures f), (SELECT f.counted_at FROM prescient.queue_figures f),
         (SELECT min(j.next_check_at) FROM prescient.future_job j
           WHERE j.next_check_at < date_bin(make_interval(secs => (SELECT s.slot_seconds FROM prescient.settings s)),
                                            p_now, timestamptz 'epoch'))
$$;
