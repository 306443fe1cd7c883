-- The dashboard's search by class or by group walked the pending checks in due order and filtered: with
-- 10 M pending, a class with no checks took 826 ms (a scan of the whole table) and a group with none
-- 56 s (the due index, row by row). Each index answers its search in the page's order, a page read and
-- stopped. Their cost: one more index entry per check scheduled (two with a group); the drain deletes
-- rows and so writes none (docs/performance.md has both measured).
CREATE INDEX future_job_job ON prescient.future_job (job, next_check_at, id);
CREATE INDEX future_job_group ON prescient.future_job (group_key, next_check_at, id) WHERE group_key IS NOT NULL;
