-- 0027: schedule() debounces with a ceiling (on_conflict 'debounce', p_max_wait) and dedupes against
-- recently settled checks of the same job key (p_dedupe_for, p_dedupe_outcomes): three parameters more.
-- The old signature goes (IF EXISTS: a new database never had it) and its grant moves to the new one.
DROP FUNCTION IF EXISTS prescient.schedule(text, text, text, timestamptz, text, text, jsonb, text, text,
                                           timestamptz, interval);
UPDATE prescient.role_grant
   SET statement = replace(statement,
                           'prescient.schedule(text, text, text, timestamptz, text, text, jsonb, text, text, timestamptz,'
                           ' interval)',
                           'prescient.schedule(text, text, text, timestamptz, text, text, jsonb, text, text, timestamptz,'
                           ' interval, interval, interval, text[])')
 WHERE statement LIKE '%prescient.schedule(text, text, text, timestamptz, text, text, jsonb, text, text, timestamptz,'
                      ' interval)%';
