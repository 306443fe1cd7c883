-- 0051: array_requests takes the payload's bound (prescient.settings.max_payload_bytes, 0049) from its callers,
-- which have read the settings already: read inside it, by a join, the bound raised the planner's estimate of
-- a bulk enqueue over jit_above_cost (every call JIT-compiled), and by a sub-select it kept payload_problem
-- from being inlined (a function call per item). schedule_problems, whose body names array_requests, goes
-- with it; the function files make both again (050), and the grants follow (role_grant).
DROP FUNCTION IF EXISTS prescient.schedule_problems(text[], text[], text[], timestamptz[], text[], text[], text[],
                                                    text[], text[], text, text, timestamptz, interval[], interval[],
                                                    interval[], text[], boolean, integer[], text[], text[]);
DROP FUNCTION IF EXISTS prescient.array_requests(text[], text[], text[], timestamptz[], text[], text[], text[], text[],
                                                 text[], text, text, interval[], interval[], interval[], text[],
                                                 timestamptz, integer, bigint, text[], integer[], text[], text[]);
