-- 0043: the `sql` class's function may return jsonb {"next": ..., "result": ...} as well as a timestamptz
-- (docs/design.md, "Results"): prescient.call_check_function answers both as a row, so it is made again.
DROP FUNCTION IF EXISTS prescient.call_check_function(text, text, jsonb, integer);
