-- 0049: a check's payload has a bound, as a run's result (64 KiB) and a digest's list (1 MiB) have: at most
-- max_payload_bytes of JSON as PostgreSQL prints it (payload::text), 2 MiB unless the schema owner sets
-- another (docs/concepts.md, "Payloads"). Every door that stores a payload judges it
-- (prescient.payload_problem, 030): schedule, the bulk enqueue, a schedule's definition. Rows already
-- stored are left as they are.
ALTER TABLE prescient.settings ADD COLUMN max_payload_bytes integer NOT NULL DEFAULT 2097152
  CHECK (max_payload_bytes BETWEEN 1024 AND 268435456);
