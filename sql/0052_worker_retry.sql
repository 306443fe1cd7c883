-- 0052: a worker retries a dead letter of a worker class (prescient.worker_retry, sql/functions/076_retry.sql),
-- with prescient_worker's rights and no prescient binary.
INSERT INTO prescient.role_grant (statement, added_by) VALUES
  ('GRANT EXECUTE ON FUNCTION prescient.worker_retry(bigint) TO prescient_worker', 52);
