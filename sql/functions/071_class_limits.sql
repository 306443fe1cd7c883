-- The limits in force for job classes (docs/guarantees.md, "Policies"): the one home of their precedence,
-- for the runner (RunnerStore::class_limits, engine/src/db/pg_runner_store.cpp) and the worker protocol
-- (worker_settle_together, 072) alike. Each field comes from the first that sets it of: the class's row in the
-- registry (prescient.job_class: `prescient jobs set`, declare_worker_class), its coded policy (the C++
-- JobPolicy its code declares), the runner's config-file defaults, then the database's settings. The coded
-- policy and the config are what only the runner knows: it passes them in; a worker has neither (NULL). The
-- backoff has no setting: NULL there is the judge's one slot, doubling, at most a day. A check's own policy
-- (its columns on future_job) is over all of these: that stays the judge's (069), which takes both.
-- In: p_jobs, the classes (a class without a row in the registry takes the rest); p_coded_*, one element per
-- class (a NULL array or element: not set); p_config_*, the config file's defaults (NULL: not set).
-- Out: one row per class, in p_jobs' order. The runner cannot honour a timeout beyond a day (deadlines
-- computed from it must not overflow): the one in force is at most a day, and a registry's beyond it is also
-- returned in timeout_cut_from, for the runner to warn. A coded policy with a limit under 1, a timeout not
-- within 1s to 1d or a backoff under a second is left out, and what is wrong with it is in coded_problem:
-- the runner refuses the class with it (its checks fail, never the batch).
CREATE OR REPLACE FUNCTION prescient.class_limits(
    p_jobs text[],
    p_coded_max_checks integer[] DEFAULT NULL, p_coded_max_attempts integer[] DEFAULT NULL,
    p_coded_backoff_seconds bigint[] DEFAULT NULL, p_coded_backoff_max_seconds bigint[] DEFAULT NULL,
    p_coded_timeout_seconds bigint[] DEFAULT NULL,
    p_config_max_checks integer DEFAULT NULL, p_config_max_attempts integer DEFAULT NULL,
    p_config_backoff_seconds bigint DEFAULT NULL, p_config_backoff_max_seconds bigint DEFAULT NULL,
    p_config_timeout_seconds bigint DEFAULT NULL)
  RETURNS TABLE (job text, max_checks integer, max_attempts integer, backoff_seconds bigint,
                 backoff_max_seconds bigint, timeout_seconds bigint, coded_problem text, timeout_cut_from bigint)
  LANGUAGE sql STABLE AS $$
  SELECT n.job,
         coalesce(c.max_checks, k.max_checks, p_config_max_checks, s.max_checks),
         coalesce(c.max_attempts, k.max_attempts, p_config_max_attempts, s.max_attempts),
         coalesce(c.backoff_seconds, k.backoff_seconds, p_config_backoff_seconds),
         coalesce(c.backoff_max_seconds, k.backoff_max_seconds, p_config_backoff_max_seconds),
         least(coalesce(c.timeout_seconds, k.timeout_seconds, p_config_timeout_seconds, s.job_timeout_seconds), 86400),
         p.problem,
         CASE WHEN c.timeout_seconds > 86400 THEN c.timeout_seconds END
    FROM unnest(p_jobs, p_coded_max_checks, p_coded_max_attempts, p_coded_backoff_seconds,
                p_coded_backoff_max_seconds, p_coded_timeout_seconds)
           WITH ORDINALITY AS n(job, max_checks, max_attempts, backoff_seconds, backoff_max_seconds,
                                timeout_seconds, o)
   CROSS JOIN prescient.settings s
    LEFT JOIN prescient.job_class c ON c.job = n.job
   CROSS JOIN LATERAL (
     SELECT CASE
       WHEN n.max_checks < 1 THEN format('max_checks %s < 1', n.max_checks)
       WHEN n.max_attempts < 1 THEN format('max_attempts %s < 1', n.max_attempts)
       WHEN n.timeout_seconds < 1 OR n.timeout_seconds > 86400
         THEN format('timeout %ss is not within 1s to 1d', n.timeout_seconds)
       WHEN n.backoff_seconds < 1 THEN format('backoff %ss < 1s', n.backoff_seconds)
       WHEN n.backoff_max_seconds < 1 THEN format('backoff %ss < 1s', n.backoff_max_seconds)
     END AS problem) p
    -- The coded policy as it is taken: all of it, or none when it has a problem.
    LEFT JOIN LATERAL (
     SELECT n.max_checks, n.max_attempts, n.backoff_seconds, n.backoff_max_seconds, n.timeout_seconds
      WHERE p.problem IS NULL) k ON true
   ORDER BY n.o
$$;
