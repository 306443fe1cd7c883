-- 0028: a recurring schedule may have a jitter (jitter_seconds): each occurrence fires at an offset of its
-- own within it, from the schedule's id and the occurrence (docs/schedules.md). Carried in the schedule's
-- check's payload; the functions that take it get one parameter more (the old signatures go, IF EXISTS: a
-- new database never had them; their grants move). cron_window_problem became cron_spread_problem.
ALTER TABLE prescient.cron_schedule ADD COLUMN jitter_seconds bigint CHECK (jitter_seconds >= 1);

DROP FUNCTION IF EXISTS prescient.cron_check_payload(prescient.cron_schedule, bigint, bigint);
DROP FUNCTION IF EXISTS prescient.cron_check_payload_of(text, integer, text, text, text, jsonb, text, bigint, bigint,
                                                        bigint, bigint, bigint);
DROP FUNCTION IF EXISTS prescient.cron_window_problem(bigint, bigint);
DROP FUNCTION IF EXISTS prescient.cron_add(text, text, text, text, jsonb, text, bigint, text, timestamptz, bigint);
DROP FUNCTION IF EXISTS prescient.cron_add_arrays(text[], text[], text[], text[], text[], text[], bigint[],
                                                  timestamptz[], text, timestamptz, bigint[]);
DROP FUNCTION IF EXISTS prescient.cron_array_items(text[], text[], text[], text[], text[], text[], bigint[],
                                                   timestamptz[], bigint[]);

UPDATE prescient.role_grant
   SET statement = replace(replace(statement,
           'timestamptz[], text, timestamptz, bigint[])', 'timestamptz[], text, timestamptz, bigint[], bigint[])'),
         'prescient.cron_add(text, text, text, text, jsonb, text, bigint, text, timestamptz, bigint)',
         'prescient.cron_add(text, text, text, text, jsonb, text, bigint, text, timestamptz, bigint, bigint)')
 WHERE statement LIKE '%prescient.cron_add_arrays(%';
