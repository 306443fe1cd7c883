-- 0001: the prescient schema: pending checks, their history, recurring schedules, the event
-- outbox and database-wide settings. Applied by `prescient migrate` in one transaction, which
-- sets prescient.slot_seconds (the slot resolution chosen with --slot) for this file.
-- Functions and triggers live in sql/functions/ (applied after the numbered files); sql/schema.sql
-- is the schema as it stands after all of them.

-- One row. The slot resolution is fixed at creation: pending checks are stored on its grid (a trigger
-- refuses a change: sql/functions/020_settings.sql).
CREATE TABLE prescient.settings (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  slot_seconds integer NOT NULL
    CHECK (slot_seconds BETWEEN 1 AND 86400 AND 86400 % slot_seconds = 0),
  max_horizon_seconds bigint NOT NULL DEFAULT 31536000 CHECK (max_horizon_seconds > 0),
  max_checks integer NOT NULL DEFAULT 5 CHECK (max_checks > 0),
  max_attempts integer NOT NULL DEFAULT 5 CHECK (max_attempts > 0),
  job_timeout_seconds integer NOT NULL DEFAULT 30 CHECK (job_timeout_seconds > 0),
  created_at timestamptz NOT NULL DEFAULT now()
);

INSERT INTO prescient.settings (slot_seconds)
  VALUES (current_setting('prescient.slot_seconds')::integer);

-- Pending checks, and only pending checks: a check leaves this table when it is finished.
CREATE TABLE prescient.future_job (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  job text NOT NULL CHECK (job <> ''),
  entity_name text NOT NULL CHECK (entity_name <> ''),
  entity_key text NOT NULL CHECK (entity_key <> ''),
  job_key text CHECK (job_key <> ''),
  group_key text CHECK (group_key <> ''),
  payload jsonb NOT NULL DEFAULT '{}',
  first_check_at timestamptz NOT NULL,
  next_check_at timestamptz NOT NULL,
  check_count integer NOT NULL DEFAULT 0 CHECK (check_count >= 0),
  attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  last_error text,
  enqueued_on timestamptz NOT NULL,
  enqueued_by text NOT NULL CHECK (enqueued_by <> ''),
  claimed_by text,
  claimed_until timestamptz,
  claim_token bigint
);
-- The runner's lookup is an equality on the slot: cost follows the due rows, not the table.
CREATE INDEX future_job_due ON prescient.future_job (next_check_at);
CREATE UNIQUE INDEX future_job_job_key ON prescient.future_job (job_key);
CREATE INDEX future_job_entity ON prescient.future_job (entity_name, entity_key);

-- Every finished check, append-only: the timeline of each check. `id` is the check's id.
CREATE TABLE prescient.job_history (
  history_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id bigint NOT NULL,
  job text NOT NULL,
  entity_name text NOT NULL,
  entity_key text NOT NULL,
  job_key text,
  group_key text,
  payload jsonb NOT NULL,
  first_check_at timestamptz NOT NULL,
  last_check_at timestamptz NOT NULL,
  check_count integer NOT NULL,
  attempts integer NOT NULL,
  last_error text,
  enqueued_on timestamptz NOT NULL,
  enqueued_by text NOT NULL,
  finished_at timestamptz NOT NULL,
  finished_by text NOT NULL,
  outcome text NOT NULL CHECK (outcome IN ('done', 'cancelled', 'failed', 'guard_max_checks',
                                           'guard_past', 'guard_horizon', 'deadline_missed')),
  run_micros bigint CHECK (run_micros >= 0)
);
CREATE INDEX job_history_id ON prescient.job_history (id);
CREATE INDEX job_history_job_key ON prescient.job_history (job_key);
CREATE INDEX job_history_entity ON prescient.job_history (entity_name, entity_key);
CREATE INDEX job_history_finished_at ON prescient.job_history (finished_at);

-- Recurring schedules. Each active schedule owns one pending future_job row of class `cron`.
CREATE TABLE prescient.schedule (
  id text PRIMARY KEY CHECK (id <> ''),
  spec text NOT NULL CHECK (spec <> ''),
  time_zone text NOT NULL DEFAULT 'UTC',
  job text NOT NULL DEFAULT 'emit',
  payload jsonb NOT NULL DEFAULT '{}',
  deadline_seconds bigint CHECK (deadline_seconds > 0),
  catch_up text NOT NULL DEFAULT 'one' CHECK (catch_up IN ('one', 'all', 'none')),
  version integer NOT NULL DEFAULT 1 CHECK (version >= 1),
  anchor_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);

-- The outbox. Ids are deterministic (<schedule>-<unix seconds>, <check id>-<check count>), so a
-- re-run emission hits the primary key and is ignored; seq orders events for readers.
CREATE TABLE prescient.event (
  seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  id text PRIMARY KEY CHECK (id <> ''),
  type text NOT NULL CHECK (type <> ''),
  source text NOT NULL,
  occurred_at timestamptz NOT NULL,
  emitted_at timestamptz NOT NULL,
  payload jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX event_emitted_at ON prescient.event (emitted_at);
