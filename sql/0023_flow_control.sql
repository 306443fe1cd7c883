-- Flow control at firing time (docs/flow-control.md): limits declared as rows, enforced by the runners
-- through the database, so they hold across every runner and process.

-- A limit: the checks it applies to share a key computed from the row (the job class, the
-- entity name, the http target, or a top-level payload field), each key value with a budget of its own
-- (or only the one value named). An operator's table: written through limit_set and limit_remove.
CREATE TABLE prescient.flow_limit (
  name text PRIMARY KEY CHECK (name <> '' AND octet_length(name) <= 200),
  -- job | entity | http_target | payload.<field>
  key text NOT NULL CHECK (key IN ('job', 'entity', 'http_target')
                           OR (key LIKE 'payload.%' AND octet_length(key) BETWEEN 9 AND 208)),
  job text CHECK (job <> ''),        -- only checks of this class (NULL: every class)
  key_value text CHECK (key_value <> ''),  -- only this key value (NULL: each value its own budget)
  rate integer CHECK (rate > 0),     -- at most `rate` checks started per `per_seconds` per key value
  per_seconds integer NOT NULL DEFAULT 1 CHECK (per_seconds BETWEEN 1 AND 86400),
  burst integer NOT NULL DEFAULT 1 CHECK (burst BETWEEN 1 AND 1000000),  -- started at once after a pause
  concurrency integer CHECK (concurrency > 0),  -- at most this many running at once per key value
  -- Within a slot, claims take the key values in turn (payload fields only: an index per field, made by
  -- limit_set, lets a claim step from one value to the next).
  fair_share boolean NOT NULL DEFAULT false,
  updated_at timestamptz NOT NULL,
  updated_by text NOT NULL CHECK (updated_by <> ''),
  CHECK (rate IS NOT NULL OR concurrency IS NOT NULL OR fair_share),
  CHECK (NOT fair_share OR (key LIKE 'payload.%' AND job IS NULL AND key_value IS NULL))
);

-- Per limit and key value: the rate's theoretical arrival time (GCRA: the next check may start at
-- tat - (burst - 1) * interval). Its row is also the lock that serialises admissions of that key value.
CREATE TABLE prescient.flow_state (
  limit_name text NOT NULL REFERENCES prescient.flow_limit (name) ON DELETE CASCADE,
  key_value text NOT NULL,
  tat timestamptz NOT NULL DEFAULT '-infinity',
  PRIMARY KEY (limit_name, key_value)
);

-- Checks admitted under a concurrency limit. One is running while its row in future_job still holds the
-- written lease it was admitted with (claim_token set, claimed_until ahead): a settlement, a release or
-- an expired lease (a runner killed) gives its place back without touching this table, whose stale rows
-- are dropped by the next admission of the key value.
CREATE TABLE prescient.flow_lease (
  limit_name text NOT NULL REFERENCES prescient.flow_limit (name) ON DELETE CASCADE,
  key_value text NOT NULL,
  check_id bigint NOT NULL,
  PRIMARY KEY (limit_name, key_value, check_id)
);

-- Each time a limit held a check back: when, why and until when. A check's first deferral by a limit is
-- recorded, not every look again while it waits for a concurrency place.
CREATE TABLE prescient.flow_deferral (
  check_id bigint NOT NULL,
  deferred_at timestamptz NOT NULL,
  limit_name text NOT NULL,
  key_value text NOT NULL,
  until timestamptz NOT NULL
);
CREATE INDEX flow_deferral_check ON prescient.flow_deferral (check_id, deferred_at);
CREATE INDEX flow_deferral_time ON prescient.flow_deferral (deferred_at);

-- Deferrals counted per limit and key value (stats, metrics, the dashboard).
CREATE TABLE prescient.flow_figure (
  limit_name text NOT NULL REFERENCES prescient.flow_limit (name) ON DELETE CASCADE,
  key_value text NOT NULL,
  deferred bigint NOT NULL,
  last_deferred_at timestamptz NOT NULL,
  PRIMARY KEY (limit_name, key_value)
);

INSERT INTO prescient.role_grant (statement, added_by) VALUES
  ('GRANT SELECT ON prescient.flow_limit, prescient.flow_figure, prescient.flow_deferral'
   ' TO prescient_client, prescient_runner', 23),
  ('GRANT SELECT, INSERT, UPDATE, DELETE ON prescient.flow_state, prescient.flow_lease, prescient.flow_figure'
   ' TO prescient_runner', 23),
  ('GRANT INSERT ON prescient.flow_deferral TO prescient_runner', 23),
  ('GRANT EXECUTE ON FUNCTION prescient.flow_admit(bigint[], text[], text[], bigint, bigint, bigint, integer,'
   ' bigint) TO prescient_runner', 23);
