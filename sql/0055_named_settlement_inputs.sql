-- 0055: the settlement's inputs travel as named records, not 19 to 33 positional parameters (decision
-- 0042). The judge (069) takes the run as one record and the check's own limits and its class's as two of one
-- type; the runner's settlement (073) takes its checks, its events and its context as three. The checks and
-- the events stay one array per field inside their record, the wire format the drain was measured on: the
-- record names them, in one place, and the settlement reads them by name. The old signatures go.
CREATE TYPE prescient.judged_run AS (
  failed boolean, error text, answer timestamptz, job text, slot timestamptz, asked_for timestamptz,
  check_count integer, attempts integer);
CREATE TYPE prescient.check_limits AS (
  max_checks integer, max_attempts integer, backoff_seconds bigint, backoff_max_seconds bigint);
CREATE TYPE prescient.settle_checks AS (
  ids bigint[], errors text[], answers timestamptz[], run_micros bigint[], payload_updates text[], results text[],
  due_us bigint[], jobs text[], slots timestamptz[], asked timestamptz[], check_counts bigint[], attempts bigint[],
  own_max_checks bigint[], own_max_attempts bigint[], own_backoff bigint[], own_backoff_max bigint[],
  max_checks bigint[], max_attempts bigint[], backoff bigint[], backoff_max bigint[]);
CREATE TYPE prescient.settle_events AS (
  ids text[], types text[], sources text[], occurred_us bigint[], payloads text[], checks bigint[],
  traceparents text[]);
CREATE TYPE prescient.settle_context AS (
  runner_id text, now timestamptz, lease_token bigint, slot_seconds integer, max_horizon_seconds bigint);

DROP FUNCTION IF EXISTS prescient.judge(boolean, text, timestamptz, text, timestamptz, timestamptz, integer, integer,
  integer, integer, bigint, bigint, integer, integer, bigint, bigint, interval, integer, timestamptz);
DROP FUNCTION IF EXISTS prescient.runner_settle(bigint[], text[], timestamptz[], bigint[], text[], text[], bigint[],
  text[], timestamptz[], timestamptz[], bigint[], bigint[], bigint[], bigint[], bigint[], bigint[], bigint[],
  bigint[], bigint[], bigint[], bigint, integer, bigint, bigint, text, text[], text[], text[], bigint[], text[],
  bigint[], text[], boolean);
DROP FUNCTION IF EXISTS prescient.runner_settle_together(bigint[], text[], timestamptz[], bigint[], text[], text[],
  bigint[], text[], timestamptz[], timestamptz[], bigint[], bigint[], bigint[], bigint[], bigint[], bigint[],
  bigint[], bigint[], bigint[], bigint[], bigint, integer, bigint, timestamptz, text, text[], text[], text[],
  bigint[], text[], bigint[], text[]);
-- Each attempt of runner_settle now passes the whole batch and the positions of the part it settles.
DROP FUNCTION IF EXISTS prescient.part_of(anyarray, integer, integer);

DELETE FROM prescient.role_grant WHERE added_by = 46 AND statement LIKE '%prescient.runner_settle%';
INSERT INTO prescient.role_grant (statement, added_by) VALUES
  ('GRANT EXECUTE ON FUNCTION prescient.runner_settle_together(prescient.settle_checks, prescient.settle_events,'
   ' prescient.settle_context, integer, integer, integer, integer),'
   ' prescient.runner_settle(prescient.settle_checks, prescient.settle_events, prescient.settle_context, boolean)'
   ' TO prescient_runner', 55);
