-- 0050: a worker declares its own class and its policy (prescient.declare_worker_class, 067), without the
-- schema owner's rights or the prescient binary: a worker class only, never a runner's.
INSERT INTO prescient.role_grant (statement, added_by) VALUES
  ('GRANT EXECUTE ON FUNCTION prescient.declare_worker_class(text, integer, integer, interval, interval, interval,'
   ' text, timestamptz) TO prescient_worker', 50);
