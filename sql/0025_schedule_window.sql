-- 0025: a recurring schedule may have a window (window_seconds): each occurrence fires at the schedule's
-- place in it, so that many schedules of one spec spread (docs/flow-control.md, "Spreading a herd"). The
-- schedule's check carries it in its payload (cron_check_payload_of); a payload without it has none. The
-- functions that take it get one parameter more: the old signatures go (IF EXISTS: a new database never
-- had them), and their grants move to the new ones.
ALTER TABLE prescient.cron_schedule ADD COLUMN window_seconds bigint CHECK (window_seconds >= 1);

DROP FUNCTION IF EXISTS prescient.cron_check_payload(prescient.cron_schedule, bigint, bigint);
DROP FUNCTION IF EXISTS prescient.cron_check_payload_of(text, integer, text, text, text, jsonb, text, bigint, bigint,
                                                        bigint, bigint);
DROP FUNCTION IF EXISTS prescient.cron_add(text, text, text, text, jsonb, text, bigint, text, timestamptz);
DROP FUNCTION IF EXISTS prescient.cron_add_arrays(text[], text[], text[], text[], text[], text[], bigint[],
                                                  timestamptz[], text, timestamptz);
DROP FUNCTION IF EXISTS prescient.cron_array_items(text[], text[], text[], text[], text[], text[], bigint[],
                                                   timestamptz[]);

UPDATE prescient.role_grant
   SET statement = replace(replace(statement,
           'prescient.cron_add_arrays(text[], text[], text[], text[], text[], text[], bigint[], timestamptz[], text,'
           ' timestamptz)',
           'prescient.cron_add_arrays(text[], text[], text[], text[], text[], text[], bigint[], timestamptz[], text,'
           ' timestamptz, bigint[])'),
         'prescient.cron_add(text, text, text, text, jsonb, text, bigint, text, timestamptz)',
         'prescient.cron_add(text, text, text, text, jsonb, text, bigint, text, timestamptz, bigint)')
 WHERE statement LIKE '%prescient.cron_add_arrays(%';
