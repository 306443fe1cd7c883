'use strict'

// Enqueueing on the caller's connection: the check commits or rolls back with the caller's transaction;
// the database's refusals arrive as typed errors naming the check and the reason.

const test = require('node:test')
const assert = require('node:assert/strict')
const { schedule, cancel, reschedule, cronAdd, RefusedError, ConflictError } = require('..')
const { newPool, workerClass, inTransaction, pendingRow, historyRows, TRACEPARENT } = require('./helpers')

const pool = newPool()
test.after(() => pool.end())

const T = new Date('2030-01-07T09:00:00Z')
const clock = () => T

test('schedule joins the caller\'s transaction: rolled back, no check; committed, one', async () => {
  const job = await workerClass(pool, 'enqueue_tx')
  await assert.rejects(inTransaction(pool, async (client) => {
    await schedule(client, { job, entityName: 'order', entityKey: 'r1', afterSeconds: 60 })
    throw new Error('the application changed its mind')
  }), /changed its mind/)
  const count = async () => Number((await pool.query(
    'SELECT count(*) FROM prescient.future_job WHERE job = $1', [job])).rows[0].count)
  assert.equal(await count(), 0)

  const made = await inTransaction(pool, (client) =>
    schedule(client, { job, entityName: 'order', entityKey: 42, at: new Date(T.getTime() + 2500), payload: { n: 1 }, clock }))
  assert.equal(await count(), 1)
  assert.equal(typeof made.id, 'string')
  assert.equal(made.status, 'created')
  assert.deepEqual(made.nextCheckAt, new Date(T.getTime() + 3000), 'rounded up to the 1 s slot')
  const { rows } = await pool.query('SELECT entity_key, payload, asked_for_at FROM prescient.future_job WHERE id = $1', [made.id])
  assert.deepEqual(rows[0], { entity_key: '42', payload: { n: 1 }, asked_for_at: new Date(T.getTime() + 2500) })
})

test('afterSeconds counts from the clock given, else from the database\'s now', async () => {
  const job = await workerClass(pool, 'enqueue_after')
  const pinned = await schedule(pool, { job, entityName: 'e', entityKey: '1', afterSeconds: 3600, clock })
  assert.deepEqual(pinned.nextCheckAt, new Date(T.getTime() + 3600 * 1000))
  const client = await pool.connect()
  try {
    await client.query('BEGIN')
    await new Promise((resolve) => setTimeout(resolve, 30)) // the transaction's now() is behind the clock
    const made = await schedule(client, { job, entityName: 'e', entityKey: '2', afterSeconds: 90 })
    const { rows } = await client.query("SELECT now() + interval '90 seconds' AS asked")
    await client.query('COMMIT')
    const asked = (await pool.query('SELECT asked_for_at FROM prescient.future_job WHERE id = $1', [made.id])).rows[0]
    assert.deepEqual(asked.asked_for_at, rows[0].asked, 'the transaction\'s now() plus the delay')
  } finally {
    client.release()
  }
})

test('a job key held by a pending check: error names it, keep keeps it, replace replaces it', async () => {
  const job = await workerClass(pool, 'enqueue_key')
  const first = await schedule(pool, { job, entityName: 'e', entityKey: '1', afterSeconds: 60, jobKey: `${job}:1`, clock })
  const err = await schedule(pool, { job, entityName: 'e', entityKey: '1', afterSeconds: 120, jobKey: `${job}:1`, clock })
    .then(() => null, (e) => e)
  assert.ok(err instanceof ConflictError, String(err))
  assert.equal(err.code, 'PR409')
  assert.equal(err.checkId, first.id)
  assert.match(err.message, new RegExp(`id ${first.id}`))

  const kept = await schedule(pool, { job, entityName: 'e', entityKey: '1', afterSeconds: 120, jobKey: `${job}:1`, onConflict: 'keep', clock })
  assert.deepEqual([kept.id, kept.status, kept.nextCheckAt], [first.id, 'kept', first.nextCheckAt])
  const replaced = await schedule(pool, { job, entityName: 'e', entityKey: '1', afterSeconds: 120, jobKey: `${job}:1`, onConflict: 'replace', clock })
  assert.deepEqual([replaced.id, replaced.status], [first.id, 'replaced'])
  assert.deepEqual(replaced.nextCheckAt, new Date(T.getTime() + 120 * 1000))
})

test('a refusal (PR400) is a RefusedError with the database\'s reason, and writes nothing', async () => {
  const err = await schedule(pool, { job: 'no_such_class', entityName: 'e', entityKey: '1', afterSeconds: 60 })
    .then(() => null, (e) => e)
  assert.ok(err instanceof RefusedError, String(err))
  assert.equal(err.code, 'PR400')
  assert.match(err.reason, /no_such_class/)
  assert.equal((await pool.query("SELECT count(*)::int AS n FROM prescient.future_job WHERE job = 'no_such_class'")).rows[0].n, 0)
  await assert.rejects(schedule(pool, { job: 'x', entityName: 'e', entityKey: '1', at: T, afterSeconds: 1 }), TypeError)
})

test('a priority is stored (5 when left out); one out of range is a RefusedError and writes nothing', async () => {
  const job = await workerClass(pool, 'enqueue_priority')
  const priorityOf = async (id) =>
    (await pool.query('SELECT priority FROM prescient.future_job WHERE id = $1', [id])).rows[0].priority
  const first = await schedule(pool, { job, entityName: 'e', entityKey: '1', afterSeconds: 60, priority: 2, clock })
  const plain = await schedule(pool, { job, entityName: 'e', entityKey: '2', afterSeconds: 60, clock })
  assert.equal(await priorityOf(first.id), 2)
  assert.equal(await priorityOf(plain.id), 5)
  const err = await schedule(pool, { job, entityName: 'e', entityKey: '3', afterSeconds: 60, priority: 12, clock })
    .then(() => null, (e) => e)
  assert.ok(err instanceof RefusedError, String(err))
  assert.equal(err.code, 'PR400')
  assert.equal(err.reason, 'the priority 12 is not one of 0 (first) to 9 (last)')
  const { rows } = await pool.query('SELECT entity_key FROM prescient.future_job WHERE job = $1 ORDER BY id', [job])
  assert.deepEqual(rows.map((r) => r.entity_key), ['1', '2'], 'nothing written for the refused one')
})

test('a trace context is stored; a malformed traceparent is a RefusedError in the database\'s words', async () => {
  const job = await workerClass(pool, 'enqueue_trace')
  const traced = await schedule(pool, {
    job, entityName: 'e', entityKey: '1', afterSeconds: 60, traceparent: TRACEPARENT, tracestate: 'vendor=abc', clock,
  })
  const { rows } = await pool.query('SELECT traceparent, tracestate FROM prescient.future_job WHERE id = $1', [traced.id])
  assert.deepEqual(rows[0], { traceparent: TRACEPARENT, tracestate: 'vendor=abc' })
  const err = await schedule(pool, { job, entityName: 'e', entityKey: '2', afterSeconds: 60, traceparent: '00-not-a-trace', clock })
    .then(() => null, (e) => e)
  assert.ok(err instanceof RefusedError, String(err))
  assert.equal(err.code, 'PR400')
  assert.match(err.reason, /is not a W3C traceparent/)
})

// An office open 09:00 to 17:00 in Berlin on weekdays. FRIDAY is 15:00 there: two of four hours of open time are
// left that day, the other two are on Monday, which opens at 08:00 UTC.
const OFFICE = { hours: Object.fromEntries(['mon', 'tue', 'wed', 'thu', 'fri'].map((day) => [day, ['09:00-17:00']])) }
const FRIDAY = new Date('2026-11-27T14:00:00Z')
const SATURDAY = new Date('2026-11-28T10:00:00Z')

test('a business delay counts the calendar\'s open time; with a calendar and no time, now\'s next opening', async () => {
  const job = await workerClass(pool, 'enqueue_business')
  await pool.query("SELECT prescient.calendar_set('office', 'Europe/Berlin', $1)", [OFFICE])
  const businessTimeOf = async (id) => (await pool.query(
    'SELECT next_check_at, calendar, calendar_version, business_delay FROM prescient.future_job WHERE id = $1',
    [id])).rows[0]
  const escalate = await schedule(pool, { job, entityName: 'ticket', entityKey: '1', at: FRIDAY, calendar: 'office',
    businessDelay: '4h', clock: () => FRIDAY })
  assert.deepEqual(await businessTimeOf(escalate.id), { next_check_at: new Date('2026-11-30T10:00:00Z'),
    calendar: 'office', calendar_version: 1, business_delay: '4h' })
  const page = await schedule(pool, { job, entityName: 'ticket', entityKey: '2', calendar: 'office', clock: () => SATURDAY })
  assert.deepEqual(await businessTimeOf(page.id), { next_check_at: new Date('2026-11-30T08:00:00Z'),
    calendar: 'office', calendar_version: 1, business_delay: null })

  const err = await schedule(pool, { job, entityName: 'ticket', entityKey: '3', at: FRIDAY, calendar: 'nope',
    businessDelay: '4h', clock: () => FRIDAY }).then(() => null, (e) => e)
  assert.ok(err instanceof RefusedError, String(err))
  assert.equal(err.code, 'PR400')
  assert.equal(err.reason, "no calendar named 'nope' (prescient calendar list)")
  await assert.rejects(schedule(pool, { job, entityName: 'ticket', entityKey: '4', afterSeconds: 60, calendar: 'office',
    businessDelay: '4h' }), { name: 'TypeError', message: /give no afterSeconds beside it/ })
  const { rows } = await pool.query('SELECT entity_key FROM prescient.future_job WHERE job = $1 ORDER BY id', [job])
  assert.deepEqual(rows.map((r) => r.entity_key), ['1', '2'], 'nothing written for the refused ones')
})

test('debounce moves the check, never past the first enqueue plus maxWaitSeconds; without it, a RefusedError', async () => {
  const job = await workerClass(pool, 'enqueue_debounce')
  const options = { job, entityName: 'order', entityKey: '1', jobKey: `${job}:1`, onConflict: 'debounce', clock }
  const first = await schedule(pool, { ...options, afterSeconds: 3600, maxWaitSeconds: 5400 })
  const second = await schedule(pool, { ...options, afterSeconds: 7200, maxWaitSeconds: 5400 })
  assert.equal(first.status, 'created')
  assert.equal(second.status, 'debounced')
  assert.equal(second.id, first.id)
  assert.deepEqual(second.nextCheckAt, new Date(T.getTime() + 5400 * 1000), 'the ceiling, not the 2 h asked for')
  const err = await schedule(pool, { ...options, afterSeconds: 60 }).then(() => null, (e) => e)
  assert.ok(err instanceof RefusedError, String(err))
  assert.equal(err.reason, 'debounce needs max_wait, its ceiling (without one, use on_conflict replace)')
})

test('collect gathers the payloads of one job key into one check, in order', async () => {
  const job = await workerClass(pool, 'enqueue_collect')
  const statuses = []
  for (const n of [1, 2, 3]) {
    const made = await schedule(pool, { job, entityName: 'user', entityKey: '7', jobKey: `${job}:7`, afterSeconds: 300,
      payload: { n }, onConflict: 'collect', maxWaitSeconds: 30 * 60, clock })
    statuses.push(made.status)
  }
  assert.deepEqual(statuses, ['created', 'collected', 'collected'])
  const { rows } = await pool.query('SELECT payload FROM prescient.future_job WHERE job = $1', [job])
  assert.deepEqual(rows, [{ payload: { collected: [{ n: 1 }, { n: 2 }, { n: 3 }] } }])
})

test('cancel by id or job key moves the check to the history; a rolled-back cancel leaves it', async () => {
  const job = await workerClass(pool, 'enqueue_cancel')
  const a = await schedule(pool, { job, entityName: 'e', entityKey: 'a', afterSeconds: 60 })
  const b = await schedule(pool, { job, entityName: 'e', entityKey: 'b', afterSeconds: 60, jobKey: `${job}:b` })
  await assert.rejects(inTransaction(pool, async (client) => {
    assert.equal(await cancel(client, { id: a.id }), a.id)
    throw new Error('rolled back')
  }), /rolled back/)
  assert.notEqual(await pendingRow(pool, a.id), null)

  assert.equal(await inTransaction(pool, (client) => cancel(client, { id: a.id, by: 'the test' })), a.id)
  assert.equal(await cancel(pool, { jobKey: `${job}:b` }), b.id)
  assert.equal(await cancel(pool, { jobKey: `${job}:b` }), null, 'nothing pending under the key any more')
  for (const id of [a.id, b.id]) {
    assert.equal(await pendingRow(pool, id), null)
    assert.deepEqual((await historyRows(pool, id)).map((h) => h.outcome), ['cancelled'])
  }
  assert.equal((await historyRows(pool, a.id))[0].finished_by, 'the test')
})

test('reschedule moves a pending check; a missing one answers null', async () => {
  const job = await workerClass(pool, 'enqueue_move')
  const made = await schedule(pool, { job, entityName: 'e', entityKey: '1', afterSeconds: 60, jobKey: `${job}:1`, clock })
  const moved = await reschedule(pool, { jobKey: `${job}:1`, afterSeconds: 7200, clock })
  assert.deepEqual(moved, { id: made.id, jobKey: `${job}:1`, nextCheckAt: new Date(T.getTime() + 7200 * 1000) })
  assert.deepEqual((await pendingRow(pool, made.id)).next_check_at, moved.nextCheckAt)
  assert.equal(await reschedule(pool, { id: '999999999', at: new Date(T.getTime() + 5000), clock }), null)
})

test('cronAdd adds a recurring schedule of a worker class; its id twice is a conflict', async () => {
  const job = await workerClass(pool, 'enqueue_cron')
  const version = await inTransaction(pool, (client) =>
    cronAdd(client, { id: `${job}-nightly`, spec: '0 3 * * *', timeZone: 'Europe/Paris', job, payload: { report: 'stock' }, clock }))
  assert.equal(version, 1)
  const { rows } = await pool.query('SELECT spec, time_zone, job, payload FROM prescient.cron_schedule WHERE id = $1', [`${job}-nightly`])
  assert.deepEqual(rows, [{ spec: '0 3 * * *', time_zone: 'Europe/Paris', job, payload: { report: 'stock' } }])
  await assert.rejects(cronAdd(pool, { id: `${job}-nightly`, spec: '0 4 * * *', job }), ConflictError)
  await assert.rejects(cronAdd(pool, { id: `${job}-bad`, spec: 'not a spec', job }), RefusedError)
})

// Every option of prescient.schedule is reachable from Node (jobs/workers/conformance/enqueue-options.json).
test('window, dedupe and its outcomes, an unknown class allowed and by: each as the database stored it', async () => {
  const job = await workerClass(pool, 'enqueue_options')
  const first = await schedule(pool, { job, entityName: 'order', entityKey: 1, afterSeconds: 3600, jobKey: `${job}:1`,
    windowSeconds: 10, by: 'node-test', clock })
  const { rows: [row] } = await pool.query(`SELECT enqueued_by, next_check_at BETWEEN $2::timestamptz
    AND $2::timestamptz + interval '10 seconds' AS in_window FROM prescient.future_job WHERE id = $1`,
  [first.id, new Date(T.getTime() + 3600e3).toISOString()])
  assert.deepEqual(row, { enqueued_by: 'node-test', in_window: true })
  await cancel(pool, { id: first.id, clock })
  const again = await schedule(pool, { job, entityName: 'order', entityKey: 1, afterSeconds: 3600, jobKey: `${job}:1`,
    dedupeForSeconds: 86400, dedupeOutcomes: ['cancelled'], clock })
  assert.equal(again.status, 'deduplicated')
  const later = await schedule(pool, { job: `${job}_later`, entityName: 'order', entityKey: 2, afterSeconds: 60,
    allowUnknownClass: true })
  assert.equal(later.status, 'created')
  await assert.rejects(schedule(pool, { job: `${job}_unknown`, entityName: 'order', entityKey: 3, afterSeconds: 60 }),
    RefusedError)
})
