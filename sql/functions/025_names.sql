-- A name as a one-line message shows it: quoted, its first 64 characters, a control character as U+XXXX.
CREATE OR REPLACE FUNCTION prescient.name_shown(p_name text)
  RETURNS text LANGUAGE sql STABLE PARALLEL SAFE
  RETURN quote_literal(
    (SELECT string_agg(CASE WHEN c ~ '[[:cntrl:]\u0080-\u009f]' THEN 'U+' || lpad(upper(to_hex(ascii(c))), 4, '0')
                            ELSE c END, '' ORDER BY n)
       FROM regexp_split_to_table(left(p_name, 64), '') WITH ORDINALITY AS t(c, n)));

-- The naming rule for what an operator names once and others refer to by that name: job classes (the
-- registry), flow limits and schedules (docs/concepts.md, "Names"). One home for every door (job_class_add,
-- declare_job_classes, limit_set, cron_add and its bulk form, cron_update): letters and digits of any
-- script, and _ . : / @ + # = - and spaces inside; nothing that markup, a shell or a list would read as
-- its own (< > & quotes, commas, brackets, wildcards), no control character. Emptiness and length are each
-- door's own rule (their messages name their limits). Names stored before the rule are left as they are.
CREATE OR REPLACE FUNCTION prescient.name_problem(p_what text, p_name text)
  RETURNS text LANGUAGE sql STABLE PARALLEL SAFE
  RETURN CASE
    WHEN p_name ~ '[[:cntrl:]\u0080-\u009f<>&"''`\\,;|*?%{}()\[\]!$^~]'
      THEN format('%s %s holds %s: a name holds letters, digits, spaces inside and _ . : / @ + # = -', p_what,
                  prescient.name_shown(p_name),
                  prescient.name_shown(substring(p_name FROM '[[:cntrl:]\u0080-\u009f<>&"''`\\,;|*?%{}()\[\]!$^~]')))
    WHEN p_name ~ '^\s|\s$' THEN format('%s %s begins or ends with a space', p_what, prescient.name_shown(p_name))
  END;
