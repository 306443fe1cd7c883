-- Trace context (docs/design.md, "Trace context"): a check may carry the W3C trace context it was created
-- in (traceparent, and tracestate with it); each run continues that trace with a span id of its own, which
-- the http class sends as its traceparent header, the command class exports as TRACEPARENT, the run's
-- events keep and its log lines show. prescient exports no spans: propagation and logs are the scope.

-- Refusal of a check's trace context, or NULL. A traceparent is version 00 as W3C Trace Context level 1
-- writes it: 00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>, lower case, neither id all zeros. A
-- tracestate goes with a traceparent only: at most 512 characters (which also bounds its keys and values),
-- at most 32 members key=value, keys and values of the characters the recommendation allows.
CREATE OR REPLACE FUNCTION prescient.trace_problem(p_traceparent text, p_tracestate text)
  RETURNS text LANGUAGE sql STABLE PARALLEL SAFE
  RETURN CASE
    WHEN p_traceparent IS NOT NULL AND NOT (p_traceparent ~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'
                                            AND substr(p_traceparent, 4, 32) <> repeat('0', 32)
                                            AND substr(p_traceparent, 37, 16) <> repeat('0', 16))
      THEN format('the traceparent %L is not a W3C traceparent (00-<32 hex trace id>-<16 hex parent id>-<2 hex'
                  ' flags>, lower case, neither id all zeros)', left(p_traceparent, 80))
    WHEN p_tracestate IS NOT NULL AND p_traceparent IS NULL
      THEN 'a tracestate needs a traceparent (it only adds to one)'
    WHEN length(p_tracestate) > 512
      THEN format('the tracestate is %s characters long (at most 512)', length(p_tracestate))
    WHEN cardinality(string_to_array(p_tracestate, ',')) > 32
      THEN format('the tracestate has %s members (at most 32)', cardinality(string_to_array(p_tracestate, ',')))
    -- The list in one expression, no subquery, so the rule inlines into its callers: members key=value (or
    -- empty) with spaces or tabs around them; a key [a-z0-9][a-z0-9_*/-]*, with an optional @tenant; a
    -- value printable ASCII without ',' and '=', not ending in a space.
    WHEN p_tracestate !~ ('^[ \t]*([a-z0-9][a-z0-9_*/-]*(@[a-z][a-z0-9_*/-]*)?='
                          '[\x21-\x2b\x2d-\x3c\x3e-\x7e]([\x20-\x2b\x2d-\x3c\x3e-\x7e]*[\x21-\x2b\x2d-\x3c\x3e-\x7e])?)?[ \t]*'
                          '(,[ \t]*([a-z0-9][a-z0-9_*/-]*(@[a-z][a-z0-9_*/-]*)?='
                          '[\x21-\x2b\x2d-\x3c\x3e-\x7e]([\x20-\x2b\x2d-\x3c\x3e-\x7e]*[\x21-\x2b\x2d-\x3c\x3e-\x7e])?)?[ \t]*)*$')
      THEN format('the tracestate %L is not a W3C tracestate (at most 32 comma-separated members key=value)',
                  left(p_tracestate, 80))
  END;

-- The traceparent a run sends on: the check's trace and flags, with a new random span id as the parent id,
-- so each run (each attempt) is a span of its own. NULL when the check has no trace context, or one not
-- written by prescient's doors that does not read as a traceparent (a run never sends a malformed one).
CREATE OR REPLACE FUNCTION prescient.run_traceparent(p_traceparent text)
  RETURNS text LANGUAGE sql VOLATILE PARALLEL SAFE
  RETURN CASE WHEN p_traceparent ~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'
    THEN '00-' || substr(p_traceparent, 4, 32) || '-' || right(replace(gen_random_uuid()::text, '-', ''), 16)
         || right(p_traceparent, 3) END;

-- A trace of its own, for a check that starts one (a schedule's occurrence): a random trace id and parent
-- id, sampled (prescient's JSON log lines carry its runs, so a collector sees them).
CREATE OR REPLACE FUNCTION prescient.new_traceparent()
  RETURNS text LANGUAGE sql VOLATILE PARALLEL SAFE
  RETURN '00-' || replace(gen_random_uuid()::text, '-', '') || '-'
         || right(replace(gen_random_uuid()::text, '-', ''), 16) || '-01';

-- The attributes of an occurrence's trace, as its tracestate: prescient=schedule:<id>;occurrence:<time>. The
-- schedule's id is percent-encoded outside [A-Za-z0-9._~:/-] (a tracestate value is printable ASCII without
-- ',' and '='); an id whose encoding is over 200 characters is named by its md5 instead.
CREATE OR REPLACE FUNCTION prescient.occurrence_tracestate(p_schedule text, p_occurrence timestamptz)
  RETURNS text LANGUAGE sql STABLE PARALLEL SAFE
  RETURN 'prescient=schedule:'
         || CASE WHEN p_schedule ~ '^[A-Za-z0-9._~:/-]{1,200}$' THEN p_schedule  -- most ids: nothing to encode
                 ELSE (SELECT CASE WHEN length(e.id) <= 200 THEN e.id ELSE 'md5.' || md5(p_schedule) END
                         FROM (SELECT string_agg(CASE WHEN c.ch ~ '^[A-Za-z0-9._~:/-]$' THEN c.ch
                                                      ELSE regexp_replace(upper(encode(convert_to(c.ch, 'UTF8'), 'hex')),
                                                                          '(..)', '%\1', 'g') END,
                                                 '' ORDER BY c.n) AS id
                                 FROM regexp_split_to_table(p_schedule, '') WITH ORDINALITY AS c(ch, n)) e) END
         || ';occurrence:' || to_char(p_occurrence AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"');
