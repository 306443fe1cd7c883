-- 0011: the same limits for every caller, C++ or SQL (engine/include/prescient/text_rules.hpp).
-- * Names and keys longer than 1024 bytes are refused with PR400 naming the field: they are B-tree
--   index entries, and PostgreSQL's own refusal of a long entry names neither the field nor the limit.
-- * A pending check's payload is a JSON object whoever writes the row (a job class reads fields of it).
CREATE OR REPLACE FUNCTION prescient.request_problem(
    p_job text, p_entity_name text, p_entity_key text, p_at timestamptz, p_job_key text,
    p_group_key text, p_payload jsonb, p_by text, p_on_conflict text, p_now timestamptz,
    p_max_horizon_seconds bigint)
  RETURNS text LANGUAGE sql STABLE PARALLEL SAFE
  RETURN CASE
    WHEN coalesce(p_job, '') = '' THEN 'the job class is empty'
    WHEN coalesce(p_entity_name, '') = '' THEN 'the entity name is empty'
    WHEN coalesce(p_entity_key, '') = '' THEN 'the entity key is empty'
    WHEN p_job_key = '' THEN 'the job key is empty (leave it out for a check without a key)'
    WHEN p_group_key = '' THEN 'the group key is empty (leave it out for a check without a group)'
    WHEN coalesce(p_by, '') = '' THEN 'enqueued_by is empty'
    WHEN octet_length(p_job) > 1024 THEN format('the job class is %s bytes long (at most 1024)', octet_length(p_job))
    WHEN octet_length(p_entity_name) > 1024
      THEN format('the entity name is %s bytes long (at most 1024)', octet_length(p_entity_name))
    WHEN octet_length(p_entity_key) > 1024
      THEN format('the entity key is %s bytes long (at most 1024)', octet_length(p_entity_key))
    WHEN octet_length(p_job_key) > 1024
      THEN format('the job key is %s bytes long (at most 1024)', octet_length(p_job_key))
    WHEN octet_length(p_group_key) > 1024
      THEN format('the group key is %s bytes long (at most 1024)', octet_length(p_group_key))
    WHEN octet_length(p_by) > 1024 THEN format('enqueued_by is %s bytes long (at most 1024)', octet_length(p_by))
    WHEN p_at IS NULL THEN 'no time given'
    WHEN p_now IS NULL THEN 'no current time given'
    WHEN p_payload IS NULL OR jsonb_typeof(p_payload) <> 'object' THEN 'the payload must be a JSON object'
    WHEN p_on_conflict IS NULL OR p_on_conflict NOT IN ('error', 'replace', 'keep')
      THEN format('on_conflict must be error, replace or keep, not %L', p_on_conflict)
    ELSE prescient.horizon_problem(p_at, p_now, p_max_horizon_seconds)
  END;

ALTER TABLE prescient.future_job ADD CONSTRAINT future_job_payload_object CHECK (jsonb_typeof(payload) = 'object');
