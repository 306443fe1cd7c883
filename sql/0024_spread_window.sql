-- 0024: a check may say it can fire any time in a window after its time (p_window), and is stored at one
-- of the window's slots (sql/functions/030_enqueue_rules.sql, spread_slot). schedule and schedule_arrays
-- take one parameter more; the old signatures go, so that a call never finds the one without a window.
-- The function files, applied after the migrations, create the new ones (on a new database the old ones
-- were never made: IF EXISTS).
DROP FUNCTION IF EXISTS prescient.schedule(text, text, text, timestamptz, text, text, jsonb, text, text, timestamptz);
DROP FUNCTION IF EXISTS prescient.schedule_arrays(text[], text[], text[], timestamptz[], text[], text[], text[], text[],
                                                  text[], text, text, timestamptz, boolean);
DROP FUNCTION IF EXISTS prescient.array_requests(text[], text[], text[], timestamptz[], text[], text[], text[], text[],
                                                 text[], text, text, timestamptz, bigint);
DROP FUNCTION IF EXISTS prescient.array_items(text[], text[], text[], timestamptz[], text[], text[], text[], text[], text[],
                                              text, text);

UPDATE prescient.role_grant
   SET statement = replace(statement,
                           'prescient.schedule(text, text, text, timestamptz, text, text, jsonb, text, text, timestamptz)',
                           'prescient.schedule(text, text, text, timestamptz, text, text, jsonb, text, text, timestamptz,'
                           ' interval)')
 WHERE statement LIKE '%prescient.schedule(text, text, text, timestamptz, text, text, jsonb, text, text, timestamptz)%';
UPDATE prescient.role_grant
   SET statement = replace(statement, 'text[], text, text, timestamptz, boolean)',
                           'text[], text, text, timestamptz, boolean, interval[])')
 WHERE statement LIKE '%prescient.schedule_arrays(%text[], text, text, timestamptz, boolean)%';
