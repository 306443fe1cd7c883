-- Pausing a job class: runners claim none of its checks while it is paused (the claim leaves out the
-- classes of prescient.paused_job); they stay pending and are due again, at their slots or at once when
-- overdue, once it is resumed. An operator's action: the schema owner's, not granted to the roles.

-- Returns false when the class was paused already.
CREATE OR REPLACE FUNCTION prescient.pause_job(p_job text, p_by text DEFAULT current_user,
                                               p_now timestamptz DEFAULT now())
  RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  IF coalesce(p_job, '') = '' THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = 'the job class is empty';
  END IF;
  IF coalesce(p_by, '') = '' THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = 'paused_by is empty';
  END IF;
  INSERT INTO prescient.paused_job (job, paused_at, paused_by) VALUES (p_job, p_now, p_by)
  ON CONFLICT (job) DO NOTHING;
  RETURN FOUND;
END $$;
REVOKE EXECUTE ON FUNCTION prescient.pause_job(text, text, timestamptz) FROM PUBLIC;

-- Returns false when the class was not paused.
-- A worker class's sleeping workers are woken (docs/workers.md): its checks may be due already.
CREATE OR REPLACE FUNCTION prescient.resume_job(p_job text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM prescient.paused_job WHERE job = p_job;
  IF FOUND AND EXISTS (SELECT FROM prescient.job_class WHERE job = p_job AND runs_in = 'worker') THEN
    PERFORM pg_notify('prescient_worker', p_job);
  END IF;
  RETURN FOUND;
END $$;
REVOKE EXECUTE ON FUNCTION prescient.resume_job(text) FROM PUBLIC;
