-- 0060: a worker may answer in business time (docs/business-time.md, "Answers in business time"):
-- worker_complete takes p_calendar and p_business_delay, one per check, beside p_next. The old signature goes,
-- and so does its grant's.
DROP FUNCTION IF EXISTS prescient.worker_complete(text, bigint[], bigint[], timestamptz[], jsonb[], timestamptz);
UPDATE prescient.role_grant
   SET statement = replace(statement,
         'prescient.worker_complete(text, bigint[], bigint[], timestamptz[], jsonb[], timestamptz)',
         'prescient.worker_complete(text, bigint[], bigint[], timestamptz[], jsonb[], timestamptz, text[], text[])')
 WHERE statement LIKE '%prescient.worker_complete(text, bigint[], bigint[], timestamptz[], jsonb[], timestamptz)%';
