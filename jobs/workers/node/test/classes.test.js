'use strict'

// A worker class and its policy declared from Node with prescient_worker's rights only (standalone and on the
// handler's declaration), a check's own policy, and retry of a dead letter: the database's rules reached, its
// refusals typed.

const test = require('node:test')
const assert = require('node:assert/strict')
const {
  Worker, declareWorkerClass, setCheckPolicy, retry, schedule, RefusedError, ConflictError, NotFoundError,
} = require('..')
const { newPool, memoryLogger, pendingRow, historyRows } = require('./helpers')

const pool = newPool() // the schema's owner: to look, and to plant a runner's failure
// The application's workers: the role prescient_worker and nothing more.
const asWorker = newPool({ options: '-c role=prescient_worker' })
test.after(() => Promise.all([pool.end(), asWorker.end()]))

const T = new Date('2030-03-04T05:00:00Z')
const hours = (h) => new Date(T.getTime() + h * 3600 * 1000)
// Scheduled a minute before T, for T: due at T (a time not ahead of "now" would go to the next slot).
const scheduledFor = (job, entityKey, payload) =>
  schedule(pool, { job, entityName: 'order', entityKey, at: T, payload, clock: () => new Date(T.getTime() - 60000) })

async function classRow(job) {
  const { rows } = await pool.query(`SELECT runs_in, max_checks, max_attempts, backoff_seconds, backoff_max_seconds,
      timeout_seconds, declared_by, policy_updated_by FROM prescient.job_class WHERE job = $1`, [job])
  return rows[0] || null
}

test('declareWorkerClass: added with its policy, known after, a runner\'s class and bad values refused', async () => {
  const job = `ship_node_${process.pid}`
  assert.equal(await declareWorkerClass(asWorker, job, { maxChecks: 60, backoffSeconds: 30 }), 'added')
  assert.equal(await declareWorkerClass(asWorker, job, { timeoutSeconds: 120, by: 'deploy-7' }), 'known')
  assert.deepEqual(await classRow(job), {
    runs_in: 'worker', max_checks: 60, max_attempts: null, backoff_seconds: '30', backoff_max_seconds: null,
    timeout_seconds: '120', declared_by: 'prescient_worker', policy_updated_by: 'deploy-7',
  })
  assert.equal(await declareWorkerClass(asWorker, job), 'known', 'no policy: the class only')

  const runner = await declareWorkerClass(asWorker, 'noop', { maxChecks: 1 }).then(() => null, (e) => e)
  assert.ok(runner instanceof RefusedError, String(runner))
  assert.equal(runner.code, 'PR400')
  assert.match(runner.reason, /job class 'noop' is run by the runner/)
  assert.equal((await classRow('noop')).max_checks, null, 'the runner\'s class is left as it was')

  const other = `${job}_b`
  for (const [policy, reason] of [
    [{ maxAttempts: 0 }, /max_attempts 0 is under 1/],
    [{ backoffSeconds: 0.5 }, /backoff .* is under a second/],
    [{ backoffSeconds: 60, backoffMaxSeconds: 10 }, /backoff_max .* is under the backoff/],
  ]) {
    await assert.rejects(declareWorkerClass(asWorker, other, policy),
      (err) => err instanceof RefusedError && reason.test(err.reason), JSON.stringify(policy))
  }
  assert.equal(await classRow(other), null, 'a refused declaration writes nothing, not even the class')

  // Types and names this side can judge, before any call: a misspelt field is not silently left out.
  await assert.rejects(declareWorkerClass(asWorker, other, { maxCheck: 3 }),
    (err) => err instanceof TypeError && /unknown policy field maxCheck/.test(err.message))
  await assert.rejects(declareWorkerClass(asWorker, other, { maxChecks: '5' }), /maxChecks is not a whole number: 5/)
  await assert.rejects(declareWorkerClass(asWorker, other, { timeoutSeconds: Infinity }), /timeoutSeconds is not a number/)
  await assert.rejects(declareWorkerClass(asWorker, ''), /needs a job class name/)
})

test('a policy on the handler\'s declaration: the class is declared at start, its policy rules its checks', async () => {
  const job = `guarded_node_${process.pid}`
  let now = T
  const clock = () => now
  const logger = memoryLogger()
  const worker = new Worker({ pool: asWorker, name: 'policy-worker', clock, logger })
  worker.handle(job, async (check) => {
    if (check.payload.fail) throw new Error('the carrier said 503')
    return new Date(check.dueAt.getTime() + 3600 * 1000) // always "look again in an hour"
  }, { maxChecks: 2, maxAttempts: 1, backoffSeconds: 60 })
  assert.throws(() => worker.handle(`${job}_x`, async () => null, { maxChecks: 1.5 }), /maxChecks is not a whole number/)
  assert.throws(() => worker.handle(`${job}_x`, async () => null, { by: 'me' }), /unknown policy field by/)

  assert.equal(await classRow(job), null)
  assert.deepEqual(await worker.drain(), [], 'nothing due yet')
  assert.deepEqual(await classRow(job), {
    runs_in: 'worker', max_checks: 2, max_attempts: 1, backoff_seconds: '60', backoff_max_seconds: null,
    timeout_seconds: null, declared_by: 'policy-worker', policy_updated_by: 'policy-worker',
  })
  assert.ok(logger.lines.some((l) => l.includes(`class ${job}: declared (added), policy maxChecks 2, maxAttempts 1, ` +
    'backoffSeconds 60')), logger.lines.join('\n'))

  const looking = await scheduledFor(job, 'A-1', {})
  const failing = await scheduledFor(job, 'B-2', { fail: true })
  const first = await worker.drain()
  assert.deepEqual(first.map((s) => [s.id, s.outcome]).sort(), [[looking.id, 'rescheduled'], [failing.id, 'failed']],
    'maxAttempts 1: the first failure is a dead letter')
  now = hours(1)
  assert.deepEqual((await worker.drain()).map((s) => [s.id, s.outcome]), [[looking.id, 'guard_max_checks']],
    'maxChecks 2: the second run that looks again ends the check')

  // Another worker's start declares the class again: 'known', the policy it gives is set.
  const second = new Worker({ pool: asWorker, name: 'policy-worker-2', logger: false })
  second.handle(job, async () => null, { maxChecks: 0 })
  await second.start()
  await second.stop()
  assert.equal((await classRow(job)).max_checks, 0)
  assert.equal((await classRow(job)).max_attempts, 1, 'a field not given is left as it was')
})

test('a policy on a runner\'s class refuses start and drain, and nothing is taken', async () => {
  for (const run of ['start', 'drain']) {
    const worker = new Worker({ pool: asWorker, name: 'runner-class', logger: false })
    worker.handle('noop', async () => null, { maxChecks: 1 })
    const err = await worker[run]().then(() => null, (e) => e)
    assert.ok(err instanceof RefusedError, `${run}: ${err}`)
    assert.match(err.reason, /is run by the runner/)
    if (run === 'start') await worker.stop()
  }
  assert.equal((await classRow('noop')).max_checks, null)
})

test('retry puts a worker class\'s dead letter back, due now; pending, unknown and a runner\'s check refused', async () => {
  const job = `retried_node_${process.pid}`
  await declareWorkerClass(asWorker, job, { maxAttempts: 1 })
  const worker = new Worker({ pool: asWorker, name: 'retry-worker', clock: () => T, logger: false })
  let fail = true
  worker.handle(job, async () => {
    if (fail) throw new Error('the carrier said 503')
    return { result: { sent: 1 } }
  })
  const { id } = await scheduledFor(job, 'C-3', { n: 1 })
  assert.deepEqual((await worker.drain()).map((s) => s.outcome), ['failed'])
  assert.equal(await pendingRow(pool, id), null)

  const before = (await pool.query('SELECT now() AS t')).rows[0].t
  const due = await retry(asWorker, id)
  assert.ok(due instanceof Date)
  assert.ok(due >= before && due <= new Date(), `due now by the server's clock: ${due.toISOString()}`)
  const pending = await pendingRow(pool, id)
  assert.deepEqual([pending.attempts, pending.last_error, pending.claimed_by], [0, 'the carrier said 503', null])
  assert.equal((await pool.query('SELECT retried FROM prescient.job_history WHERE id = $1', [id])).rows[0].retried, true)

  const again = await retry(asWorker, id).then(() => null, (e) => e)
  assert.ok(again instanceof ConflictError, String(again))
  assert.equal(again.code, 'PR409')
  assert.equal(again.checkId, id)
  assert.match(again.reason, /is pending already/)

  fail = false
  assert.deepEqual((await worker.drain()).map((s) => [s.id, s.outcome]), [[id, 'done']], 'the retried check runs again')
  assert.deepEqual((await historyRows(pool, id)).map((h) => h.outcome), ['failed', 'done'])

  const unknown = await retry(asWorker, '987654321').then(() => null, (e) => e)
  assert.ok(unknown instanceof NotFoundError, String(unknown))
  assert.equal(unknown.code, 'PR404')

  // A runner's dead letter is not a worker's to retry.
  await pool.query(`INSERT INTO prescient.job_history (id, job, entity_name, entity_key, payload, first_check_at,
      last_check_at, check_count, attempts, last_error, enqueued_on, enqueued_by, finished_at, finished_by, outcome)
    VALUES (987654000, 'noop', 'orders', '1', '{}', now(), now(), 0, 3, 'boom', now(), 'app', now(), 'runner', 'failed')`)
  const runner = await retry(asWorker, 987654000).then(() => null, (e) => e)
  assert.ok(runner instanceof RefusedError, String(runner))
  assert.match(runner.reason, /which the runner runs/)
  assert.equal(await pendingRow(pool, '987654000'), null)

  await assert.rejects(retry(asWorker, 'C-3'), /retry needs a check id/)
  await assert.rejects(retry(asWorker, -1), /retry needs a check id/)
})

test('setCheckPolicy: one check\'s own policy over its class\'s, cleared by leaving fields out', async () => {
  const job = `own_policy_node_${process.pid}`
  await declareWorkerClass(asWorker, job, { maxChecks: 10 })
  const worker = new Worker({ pool: asWorker, name: 'own-policy', clock: () => T, logger: false })
  worker.handle(job, async (check) => new Date(check.dueAt.getTime() + 3600 * 1000)) // always "look again"
  const strict = await scheduledFor(job, 'D-4', {})
  const lax = await scheduledFor(job, 'E-5', {})
  const own = async (id) => (await pool.query(`SELECT max_checks, max_attempts, backoff_seconds, backoff_max_seconds
      FROM prescient.future_job WHERE id = $1`, [id])).rows[0]

  assert.equal(await setCheckPolicy(asWorker, strict.id, { maxChecks: 1, backoffSeconds: 30 }), true)
  assert.deepEqual(await own(strict.id), { max_checks: 1, max_attempts: null, backoff_seconds: '30', backoff_max_seconds: null })
  assert.equal(await setCheckPolicy(asWorker, lax.id, { maxChecks: 3, maxAttempts: 2 }), true)
  assert.equal(await setCheckPolicy(asWorker, lax.id, {}), true)
  assert.deepEqual(await own(lax.id), { max_checks: null, max_attempts: null, backoff_seconds: null,
    backoff_max_seconds: null }, 'fields left out are cleared: the class\'s policy applies')

  const settled = await worker.drain()
  assert.deepEqual(settled.map((s) => [s.id, s.outcome]).sort(),
    [[strict.id, 'guard_max_checks'], [lax.id, 'rescheduled']].sort(), 'its own maxChecks 1 ends it at its first run')

  assert.equal(await setCheckPolicy(asWorker, strict.id, { maxChecks: 4 }), false, 'no longer pending')
  await assert.rejects(setCheckPolicy(asWorker, lax.id, { maxAttempts: 0 }),
    (err) => err instanceof RefusedError && /max_attempts 0 is under 1/.test(err.reason) && err.checkId === lax.id)
  assert.equal((await own(lax.id)).max_attempts, null, 'a refused call writes nothing')
  await assert.rejects(setCheckPolicy(asWorker, lax.id, { timeoutSeconds: 60 }), /unknown policy field timeoutSeconds/)
  await assert.rejects(setCheckPolicy(asWorker, 'E-5', {}), /setCheckPolicy needs a check id/)
})
