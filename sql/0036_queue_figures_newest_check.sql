-- 0036: the newest check a count of the queue figures saw. `prescient stats` showed figures up to a minute
-- old, so right after a bulk enqueue it said `pending 0`. A check enqueued since a count has a higher id (an
-- identity) than every check the count saw, which one probe of the primary key tells: stats counts again
-- then (engine/src/db/queue_stats.cpp). Nothing is written on the enqueue path.
ALTER TABLE prescient.queue_figures ADD COLUMN newest_check_id bigint NOT NULL DEFAULT 0;
