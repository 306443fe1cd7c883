-- 0011: the same limits for every caller, C++ or SQL.
-- * Names and keys longer than 1024 bytes are refused with PR400 naming the field (request_problem, in
--   sql/functions/030_enqueue_rules.sql).
-- * A pending check's payload is a JSON object whoever writes the row (a job class reads fields of it).
ALTER TABLE prescient.future_job ADD CONSTRAINT future_job_payload_object CHECK (jsonb_typeof(payload) = 'object');
