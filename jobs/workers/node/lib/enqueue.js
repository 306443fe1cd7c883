'use strict'

// Enqueueing from the application's own transaction: each function runs one statement on the client the
// caller passes (a pg Client or PoolClient inside BEGIN ... COMMIT), so the check commits or rolls back
// with the application's own writes. They call prescient's SQL functions (docs/workers.md), which enforce
// every rule; this side only names the arguments.

const { namedCall, run, secondsArgument } = require('./call')

function timeText(value, what) {
  const date = value instanceof Date ? value : new Date(value)
  if (Number.isNaN(date.getTime())) throw new TypeError(`${what} is not a valid time: ${String(value)}`)
  return date.toISOString()
}

// The time asked for: `at`, or `afterSeconds` from now (the clock's now if one is given, else the
// database's, the same now() the function takes as p_now); with `nowIfNeither` and neither given, now.
function timeArgument(options, clock, what, nowIfNeither = false) {
  const { at } = options
  // Neither, where that is allowed, is now: now plus no delay.
  const afterSeconds = options.afterSeconds ?? (at === undefined && nowIfNeither ? 0 : undefined)
  if ((at === undefined) === (afterSeconds === undefined)) {
    throw new TypeError(`${what} needs exactly one of at (a time) or afterSeconds (a delay)` +
      (nowIfNeither ? ' (or neither: now)' : ''))
  }
  if (at !== undefined) return ['p_at', timeText(at, 'at'), 'timestamptz']
  if (typeof afterSeconds !== 'number' || !Number.isFinite(afterSeconds)) {
    throw new TypeError(`afterSeconds is not a number of seconds: ${String(afterSeconds)}`)
  }
  if (clock) return ['p_at', new Date(clock().getTime() + afterSeconds * 1000).toISOString(), 'timestamptz']
  return ['p_at', afterSeconds, 'double precision', "now() + $? * interval '1 second'"]
}

function nowArgument(clock) {
  return ['p_now', clock ? timeText(clock(), 'the clock') : undefined, 'timestamptz']
}

function idText(id) {
  if (id === undefined || id === null) return undefined
  return String(id)
}

/**
 * Schedules a check of `job` for an entity, at a time or after a delay. `onConflict` (a pending check holds
 * `jobKey`): 'error' (the default), 'replace', 'keep', 'debounce' (replace, never past the first enqueue plus
 * `maxWaitSeconds`) or 'collect' (a digest: the check's payload is { collected: [...] }, every enqueue's
 * payload in arrival order); both need `maxWaitSeconds`. `priority`: 0 (first) to 9 (last) among the checks
 * due at the same time; left out, the database's default, 5. `traceparent` and `tracestate`: the W3C trace
 * context the check is created in (the caller's span); each run's handler gets that trace with a span id of
 * the run's own (`check.traceparent`). `windowSeconds`: it may fire any time in this window after its time (a
 * herd spreads over the window's slots). `dedupeForSeconds` (with a jobKey): not scheduled again while a check
 * of the key settled with one of `dedupeOutcomes` (default ['done']) within it (status deduplicated).
 * `allowUnknownClass`: accept a class the registry does not know yet. `calendar`: the check is due in
 * that calendar's open time (docs/business-time.md): `businessDelay` of open time after its time ('4h', '90m',
 * '1h30m', '3bd'), or with none at its time if the calendar is open then, else at its next opening; with a
 * calendar the time may be left out (now), and a business delay counts from `at` or now, never beside
 * `afterSeconds`. Resolves to
 * { id, jobKey, nextCheckAt, firstCheckAt, status } (status: created, replaced, kept, debounced, collected
 * or deduplicated).
 */
async function schedule(client, options) {
  const { job, entityName, entityKey, afterSeconds, jobKey, groupKey, payload, onConflict, maxWaitSeconds, priority,
    traceparent, tracestate, calendar, businessDelay, by, windowSeconds, dedupeForSeconds, dedupeOutcomes,
    allowUnknownClass, clock } = options || {}
  if (businessDelay !== undefined && afterSeconds !== undefined) {
    throw new TypeError('schedule: a business delay counts from at or from now: give no afterSeconds beside it')
  }
  const call = namedCall('prescient.schedule', [
    ['p_job', job, 'text'],
    ['p_entity_name', entityName, 'text'],
    ['p_entity_key', entityKey === undefined ? undefined : String(entityKey), 'text'],
    timeArgument(options || {}, clock, 'schedule', calendar !== undefined),
    ['p_job_key', jobKey, 'text'],
    ['p_group_key', groupKey, 'text'],
    ['p_payload', payload === undefined ? undefined : JSON.stringify(payload), 'jsonb'],
    ['p_by', by, 'text'],
    ['p_on_conflict', onConflict, 'text'],
    secondsArgument('p_max_wait', maxWaitSeconds),
    nowArgument(clock),
    ['p_priority', priority, 'integer'],
    ['p_traceparent', traceparent, 'text'],
    ['p_tracestate', tracestate, 'text'],
    ['p_calendar', calendar, 'text'],
    ['p_business_delay', businessDelay, 'text'],
    secondsArgument('p_window', windowSeconds),
    secondsArgument('p_dedupe_for', dedupeForSeconds),
    ['p_dedupe_outcomes', dedupeOutcomes, 'text[]'],
    ['p_allow_unknown_class', allowUnknownClass, 'boolean'],
  ])
  const { rows } = await run(client, `SELECT * FROM ${call.text}`, call.values)
  const row = rows[0]
  return {
    id: row.id,
    jobKey: row.job_key,
    nextCheckAt: row.next_check_at,
    firstCheckAt: row.first_check_at,
    status: row.status,
  }
}

/**
 * Cancels a pending check by id or by job key (exactly one): it moves to the history as cancelled.
 * Resolves to its id, or null when no pending check matched (it may have finished already).
 */
async function cancel(client, options) {
  const { id, jobKey, by, clock } = options || {}
  if ((id === undefined) === (jobKey === undefined)) throw new TypeError('cancel needs exactly one of id or jobKey')
  const call = namedCall('prescient.cancel', [
    ['p_id', idText(id), 'bigint'],
    ['p_job_key', jobKey, 'text'],
    ['p_by', by, 'text'],
    nowArgument(clock),
  ])
  const { rows } = await run(client, `SELECT ${call.text} AS id`, call.values, idText(id))
  return rows[0].id
}

/**
 * Moves a pending check (by id or job key) to another time, by schedule's rounding and horizon rules.
 * Resolves to { id, jobKey, nextCheckAt }, or null when no pending check matched.
 */
async function reschedule(client, options) {
  const { id, jobKey, clock } = options || {}
  if ((id === undefined) === (jobKey === undefined)) {
    throw new TypeError('reschedule needs exactly one of id or jobKey')
  }
  const call = namedCall('prescient.reschedule', [
    timeArgument(options, clock, 'reschedule'),
    ['p_id', idText(id), 'bigint'],
    ['p_job_key', jobKey, 'text'],
    nowArgument(clock),
  ])
  const { rows } = await run(client, `SELECT * FROM ${call.text}`, call.values, idText(id))
  if (rows.length === 0) return null
  return { id: rows[0].id, jobKey: rows[0].job_key, nextCheckAt: rows[0].next_check_at }
}

/**
 * Adds a recurring schedule: every occurrence of the cron `spec` (in `timeZone`) enqueues a check of `job`
 * with `payload`. Needs the schema owner's rights (prescient.cron_add is not granted to the client roles).
 * Resolves to the schedule's version (1).
 */
async function cronAdd(client, options) {
  const {
    id, spec, timeZone, job, payload, catchUp, deadlineSeconds, windowSeconds, jitterSeconds, scheduleOptions,
    by, clock,
  } = options || {}
  const call = namedCall('prescient.cron_add', [
    ['p_id', id, 'text'],
    ['p_spec', spec, 'text'],
    ['p_time_zone', timeZone, 'text'],
    ['p_job', job, 'text'],
    ['p_payload', payload === undefined ? undefined : JSON.stringify(payload), 'jsonb'],
    ['p_catch_up', catchUp, 'text'],
    ['p_deadline_seconds', deadlineSeconds, 'bigint'],
    ['p_by', by, 'text'],
    nowArgument(clock),
    ['p_window_seconds', windowSeconds, 'bigint'],
    ['p_jitter_seconds', jitterSeconds, 'bigint'],
    ['p_options', scheduleOptions === undefined ? undefined : JSON.stringify(scheduleOptions), 'jsonb'],
  ])
  const { rows } = await run(client, `SELECT ${call.text} AS version`, call.values)
  return rows[0].version
}

module.exports = { schedule, cancel, reschedule, cronAdd }
