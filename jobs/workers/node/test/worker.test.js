'use strict'

// The worker against the real database and, except where a test pins it, the real clock (slots of 1 s):
// the wake-up, failures that fail one check alone, results, answers in business time, the concurrency bound,
// batched settlements, heartbeats, lost leases, the graceful stop, and the prescient_worker role.

const test = require('node:test')
const assert = require('node:assert/strict')
const { Worker, schedule, RefusedError, LeaseLostError } = require('..')
const {
  databaseUrl, newPool, workerClass, memoryLogger, waitFor, pendingRow, historyRows, deskCalendar, businessDue,
  TRACEPARENT,
} = require('./helpers')

const pool = newPool()
test.after(() => pool.end())

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

// The app's pool, counting the protocol's calls by function name (worker_take, worker_complete, ...).
function countingPool() {
  const calls = {}
  return {
    calls,
    query(text, values) {
      const fn = /prescient\.(worker_\w+)/.exec(typeof text === 'string' ? text : text.text)
      if (fn) calls[fn[1]] = (calls[fn[1]] || 0) + 1
      return pool.query(text, values)
    },
    connect: () => pool.connect(),
  }
}

async function scheduleNow(job, n, payload = {}) {
  const ids = []
  for (let i = 0; i < n; i++) {
    ids.push((await schedule(pool, { job, entityName: 'item', entityKey: String(i), at: new Date(), payload })).id)
  }
  return ids
}

test('a started worker sleeps, wakes on NOTIFY, and runs a check at its slot, never before', async () => {
  const job = await workerClass(pool, 'w_wake')
  const logger = memoryLogger()
  const worker = new Worker({ pool, name: 'wake', logger, leaseSeconds: 5 })
  const runs = []
  worker.handle(job, async (check) => {
    runs.push({ id: check.id, at: new Date(), dueAt: check.dueAt })
    return null
  })
  await worker.start()
  try {
    await sleep(300) // nothing pending: it sleeps its minute, unless woken
    const [id] = await scheduleNow(job, 1)
    await waitFor('the check has run', () => runs.length === 1, 4000)
    assert.equal(runs[0].id, id)
    assert.ok(runs[0].at >= runs[0].dueAt, `ran at ${runs[0].at.toISOString()}, due ${runs[0].dueAt.toISOString()}`)
    await waitFor('the check is in the history', async () => (await historyRows(pool, id)).length === 1, 2000)
    assert.deepEqual((await historyRows(pool, id)).map((h) => [h.outcome, h.finished_by]), [['done', 'wake']])
    assert.ok(logger.lines.some((l) => new RegExp(`took 1 check\\(s\\): ${id} `).test(l)), logger.lines.join('\n'))
  } finally {
    await worker.stop()
  }
})

test('answers through drain (pinned clock): a throw, a bad answer, a result, a next time, a result too big', async () => {
  const job = await workerClass(pool, 'w_answers')
  const T = new Date('2030-01-07T09:00:00Z')
  let now = T
  const clock = () => now
  const worker = new Worker({ pool, name: 'answers', clock, logger: false })
  const make = async (payload) => (await schedule(pool, { job, entityName: 'e', entityKey: payload.kind, at: T, payload, clock })).id
  const id = {
    throws: await make({ kind: 'throws' }),
    nul: await make({ kind: 'nul' }),
    bad: await make({ kind: 'bad' }),
    result: await make({ kind: 'result' }),
    next: await make({ kind: 'next' }),
    big: await make({ kind: 'big' }),
    done: await make({ kind: 'done' }),
  }
  worker.handle(job, async (check) => {
    switch (check.payload.kind) {
      case 'throws': throw new Error('the warehouse API said 503')
      case 'nul': throw new Error('a NUL \u0000 in the message')
      case 'bad': return 'tomorrow'
      case 'result': return { result: { sent: ['mail'], n: 2 } }
      case 'next': return new Date(check.dueAt.getTime() + 90500)
      case 'big': return { result: 'x'.repeat(70000) }
      default: return undefined
    }
  })
  now = new Date(T.getTime() + 1000)
  const settled = await worker.drain()
  const outcome = Object.fromEntries(settled.map((s) => [s.id, s.outcome]))
  assert.deepEqual(outcome, {
    [id.throws]: 'retried', [id.nul]: 'retried', [id.bad]: 'retried', [id.result]: 'done', [id.next]: 'rescheduled',
    [id.big]: 'retried', [id.done]: 'done',
  })
  assert.equal((await pendingRow(pool, id.throws)).last_error, 'the warehouse API said 503')
  assert.equal((await pendingRow(pool, id.throws)).attempts, 1)
  assert.equal((await pendingRow(pool, id.nul)).last_error, 'a NUL \\u0000 in the message')
  assert.match((await pendingRow(pool, id.bad)).last_error,
    /answered "tomorrow": expected a Date, null, \{ result \} or \{ calendar, businessDelay \}/)
  assert.match((await pendingRow(pool, id.big)).last_error, new RegExp(`the answer was refused: check ${id.big}: its result is \\d+ bytes`))
  assert.deepEqual((await historyRows(pool, id.result))[0].result, { sent: ['mail'], n: 2 })
  assert.equal((await historyRows(pool, id.done))[0].result, null)
  assert.deepEqual((await pendingRow(pool, id.next)).next_check_at, new Date(T.getTime() + 1000 + 91000), 'rounded up to the slot')
})

// The app's pool, keeping what each worker_complete sent: its ids, calendars and business delays.
function completionsPool() {
  const completions = []
  return {
    completions,
    query(text, values) {
      if (/prescient\.worker_complete/.test(text)) {
        completions.push({ ids: values[1], calendars: values[6], businessDelays: values[7] })
      }
      return pool.query(text, values)
    },
    connect: () => pool.connect(),
  }
}

// A Monday in January: the worker's now below is 15:00:01.250 in Berlin, so 4 hours of the desk's open time
// (weekdays 09:00 to 17:00) end on Tuesday at 11:00:01.250, 10:00:02 UTC once rounded up to the slot of 1 s.
const MONDAY = new Date('2030-01-07T14:00:00Z')
const MONDAY_PLUS_4H_OPEN = new Date('2030-01-08T10:00:02Z')

test('a handler answers in business time; an unknown calendar fails that check alone (pinned clock)', async () => {
  await deskCalendar(pool)
  const job = await workerClass(pool, 'w_business')
  let now = MONDAY
  const clock = () => now
  const id = {}
  for (const key of ['desk', 'nowhere', 'done']) {
    id[key] = (await schedule(pool, { job, entityName: 'ticket', entityKey: key, at: MONDAY, clock })).id
  }
  const recording = completionsPool()
  const logger = memoryLogger()
  const worker = new Worker({ pool: recording, name: 'business', clock, logger })
  worker.handle(job, async (check) => {
    switch (check.entityKey) {
      case 'desk': return { calendar: 'desk', businessDelay: '4h' }
      case 'nowhere': return { calendar: 'nowhere', businessDelay: '4h' }
      default: return null
    }
  })
  now = new Date(MONDAY.getTime() + 1250)
  const settled = Object.fromEntries((await worker.drain()).map((s) => [s.id, s]))
  assert.deepEqual([settled[id.desk].outcome, settled[id.nowhere].outcome, settled[id.done].outcome],
    ['rescheduled', 'retried', 'done'], logger.lines.join('\n'))

  const due = await businessDue(pool, 'desk', now, '4h')
  assert.deepEqual(due, MONDAY_PLUS_4H_OPEN, 'counted in open time: over the evening and the night')
  const desk = await pendingRow(pool, id.desk)
  assert.deepEqual([desk.next_check_at, desk.check_count, desk.attempts, desk.claimed_by], [due, 1, 0, null])
  assert.deepEqual(settled[id.desk].nextCheckAt, due)

  const nowhere = await pendingRow(pool, id.nowhere)
  assert.equal(nowhere.attempts, 1)
  assert.match(nowhere.last_error,
    new RegExp(`^the answer was refused: check ${id.nowhere}: no calendar named '?nowhere`))
  assert.ok(logger.events.some((e) => e.fields.event === 'answer_refused' && e.fields.checkId === id.nowhere &&
    /nowhere/.test(e.fields.error)), logger.lines.join('\n'))
  assert.deepEqual((await historyRows(pool, id.done)).map((h) => h.outcome), ['done'])

  // The three answered together went in one call, refused for the one; then each alone, the calendars and
  // delays only with an answer in business time.
  const [together, ...alone] = recording.completions
  assert.deepEqual(Object.fromEntries(together.ids.map((checkId, i) =>
    [checkId, [together.calendars[i], together.businessDelays[i]]])),
  { [id.desk]: ['desk', '4h'], [id.nowhere]: ['nowhere', '4h'], [id.done]: [null, null] })
  assert.deepEqual(Object.fromEntries(alone.map((c) => [c.ids.join(), [c.calendars, c.businessDelays]])),
    { [id.desk]: [['desk'], ['4h']], [id.nowhere]: [['nowhere'], ['4h']], [id.done]: [null, null] })
})

test('a batch handler answers in business time, each answer judged alone (pinned clock)', async () => {
  await deskCalendar(pool)
  const job = await workerClass(pool, 'w_business_batch')
  let now = MONDAY
  const clock = () => now
  const keys = ['desk', 'a-day', 'no-delay', 'result']
  const ids = []
  for (const key of keys) {
    ids.push((await schedule(pool, { job, entityName: 'ticket', entityKey: key, at: MONDAY, clock })).id)
  }
  const worker = new Worker({ pool, name: 'business-batch', clock, logger: false })
  worker.handleBatch(job, async (checks) => checks.map((c) => {
    switch (c.entityKey) {
      case 'desk': return { calendar: 'desk', businessDelay: '4h' }
      case 'a-day': return { calendar: 'desk', businessDelay: '1d' } // not a business delay: 1bd, or 8h
      case 'no-delay': return { calendar: 'desk' }
      default: return { result: { escalated: false } }
    }
  }))
  now = new Date(MONDAY.getTime() + 1250)
  const outcome = Object.fromEntries((await worker.drain()).map((s) => [s.id, s.outcome]))
  assert.deepEqual(ids.map((id) => outcome[id]), ['rescheduled', 'retried', 'retried', 'done'])
  assert.deepEqual((await pendingRow(pool, ids[0])).next_check_at, MONDAY_PLUS_4H_OPEN)
  assert.match((await pendingRow(pool, ids[1])).last_error,
    new RegExp(`^the answer was refused: check ${ids[1]}: business delay '1d'`))
  assert.match((await pendingRow(pool, ids[2])).last_error,
    /answered \{"calendar":"desk"\}: expected a Date, null, \{ result \} or \{ calendar, businessDelay \}/)
  assert.deepEqual((await historyRows(pool, ids[3]))[0].result, { escalated: false })
})

test('each attempt of a traced check is a span of its own in the caller\'s trace (pinned clock)', async () => {
  const job = await workerClass(pool, 'w_traced')
  const T = new Date('2030-01-07T09:00:00Z')
  let now = T
  const clock = () => now
  const worker = new Worker({ pool, name: 'traced', clock, logger: false })
  const traced = (await schedule(pool, {
    job, entityName: 'e', entityKey: 'traced', at: T, traceparent: TRACEPARENT, tracestate: 'vendor=abc', clock,
  })).id
  await schedule(pool, { job, entityName: 'e', entityKey: 'plain', at: T, clock })
  const seen = []
  worker.handle(job, async (check) => {
    seen.push(check)
    if (check.id === traced && check.attempts === 0) throw new Error('first attempt')
    return null
  })
  now = new Date(T.getTime() + 1000)
  await worker.drain()
  now = new Date(T.getTime() + 3600e3) // past the retry's backoff
  await worker.drain()

  const [, traceId, callerSpan, flags] = TRACEPARENT.split('-')
  const plain = seen.filter((c) => c.id !== traced)
  assert.deepEqual(plain.map((c) => [c.traceparent, c.tracestate]), [[null, null]], 'the untraced check')
  const runs = seen.filter((c) => c.id === traced).map((c) => [...c.traceparent.split('-'), c.tracestate])
  assert.equal(runs.length, 2, 'two attempts')
  for (const [version, runTrace, , runFlags, state] of runs) {
    assert.deepEqual([version, runTrace, runFlags, state], ['00', traceId, flags, 'vendor=abc'])
  }
  const spans = new Set(runs.map((r) => r[2]))
  assert.equal(spans.size, 2, `the two attempts share a span: ${[...spans]}`)
  assert.ok(!spans.has(callerSpan), 'a run reused the caller\'s span')
})

test('at most `concurrency` handlers run at once', async () => {
  const job = await workerClass(pool, 'w_bound')
  const worker = new Worker({ pool, name: 'bound', concurrency: 3, batchSize: 10, logger: false })
  let running = 0
  let most = 0
  worker.handle(job, async () => {
    running++
    most = Math.max(most, running)
    await sleep(100)
    running--
    return null
  })
  const ids = await scheduleNow(job, 9)
  await worker.start()
  try {
    await waitFor('all nine are done', async () =>
      Number((await pool.query('SELECT count(*) FROM prescient.job_history WHERE id = ANY($1)', [ids])).rows[0].count) === 9, 8000)
  } finally {
    await worker.stop()
  }
  assert.equal(most, 3)
})

test('answers ready together settle in one call; failures in one worker_fail', async () => {
  const job = await workerClass(pool, 'w_batch')
  const counting = countingPool()
  const worker = new Worker({ pool: counting, name: 'batch', concurrency: 6, logger: false })
  let arrived = 0
  let open
  const gate = new Promise((resolve) => { open = resolve })
  worker.handle(job, async (check) => {
    if (++arrived === 6) open() // all six answer in the same turn of the event loop
    await gate
    if (check.payload.fail) throw new Error('failed together')
    return null
  })
  const at = new Date(Date.now() + 200) // one slot for all six: one take
  for (let i = 0; i < 6; i++) {
    await schedule(pool, { job, entityName: 'e', entityKey: String(i), at, payload: { fail: i >= 4 } })
  }
  await worker.start()
  try {
    await waitFor('all six are settled', () => arrived === 6 && counting.calls.worker_fail === 1, 5000)
    await waitFor('the completions too', () => counting.calls.worker_complete === 1, 1000)
  } finally {
    await worker.stop()
  }
  assert.deepEqual([counting.calls.worker_take >= 1, counting.calls.worker_complete, counting.calls.worker_fail], [true, 1, 1])
})

test('a group\'s checks run one at a time, in order, each taken as soon as the one before settles', async () => {
  const job = await workerClass(pool, 'w_group')
  const at = new Date(Date.now() + 200)
  const ids = []
  for (let i = 0; i < 4; i++) {
    ids.push((await schedule(pool, { job, entityName: 'e', entityKey: String(i), at, groupKey: `${job}:g` })).id)
  }
  const worker = new Worker({ pool, name: 'group', concurrency: 4, logger: false })
  const starts = []
  let running = 0
  let most = 0
  worker.handle(job, async (check) => {
    starts.push({ id: check.id, at: Date.now() })
    most = Math.max(most, ++running)
    await sleep(50)
    running--
    return null
  })
  await worker.start()
  try {
    await waitFor('all four are done', async () =>
      Number((await pool.query('SELECT count(*) FROM prescient.job_history WHERE id = ANY($1)', [ids])).rows[0].count) === 4, 6000)
  } finally {
    await worker.stop()
  }
  assert.deepEqual(starts.map((s) => s.id), ids)
  assert.equal(most, 1)
  const span = starts[3].at - starts[0].at
  assert.ok(span < 800, `four 50 ms checks of one group took ${span} ms from first to last start`)
})

// A settlement call lost with its connection (a failover) is sent again once connected, not left to the lease
// (it once was: the check ran again 30 s later). Whether the lost call had taken effect or not, the check is
// done once, by this worker, long before its lease would end.
test('a settlement lost with its connection is sent again, and settles the check once', async () => {
  for (const tookEffect of [false, true]) {
    const job = await workerClass(pool, 'w_resend')
    const [id] = await scheduleNow(job, 1)
    let cut = 0
    const lost = () => { throw new Error('Connection terminated unexpectedly') }
    const cutting = {
      query(text, values) {
        if (cut === 0 && /prescient\.worker_complete/.test(typeof text === 'string' ? text : text.text)) {
          cut++
          return tookEffect ? pool.query(text, values).then(lost) : Promise.resolve().then(lost)
        }
        return pool.query(text, values)
      },
      connect: () => pool.connect(),
    }
    const name = `resend-${tookEffect}`
    const logger = memoryLogger()
    const worker = new Worker({ pool: cutting, name, logger, leaseSeconds: 30 })
    let runs = 0
    worker.handle(job, async () => {
      runs++
      return null
    })
    await worker.start()
    try {
      await waitFor('the check is in the history', async () => (await historyRows(pool, id)).length > 0, 5000)
        .catch((err) => { throw new Error(`${err.message}\n${logger.lines.join('\n')}`) })
      await sleep(1500) // a second send has come by now
      assert.deepEqual((await historyRows(pool, id)).map((h) => [h.outcome, h.finished_by]), [['done', name]])
      assert.equal(cut, 1)
      assert.equal(runs, 1)
      assert.ok(logger.lines.some((l) => /sending again/.test(l)), logger.lines.join('\n'))
    } finally {
      await worker.stop()
    }
  }
})

test('heartbeats keep a lease past its length; without them the late answer is lease_lost', async () => {
  const job = await workerClass(pool, 'w_beat')
  const [kept] = await scheduleNow(job, 1, { ms: 2200 })
  const counting = countingPool()
  const beating = new Worker({ pool: counting, name: 'beating', leaseSeconds: 0.6, logger: false })
  beating.handle(job, async (check) => { await sleep(check.payload.ms); return null })
  const lost = []
  beating.on('leaseLost', (err) => lost.push(err))
  await beating.start()
  try {
    await waitFor('the long check is done', async () => (await historyRows(pool, kept)).length === 1, 6000)
  } finally {
    await beating.stop()
  }
  assert.deepEqual(lost, [])
  assert.ok(counting.calls.worker_extend >= 3, `${counting.calls.worker_extend} heartbeats in 2.2 s of a 0.6 s lease`)
  assert.deepEqual((await historyRows(pool, kept)).map((h) => h.outcome), ['done'])

  const job2 = await workerClass(pool, 'w_nobeat')
  const [late] = await scheduleNow(job2, 1, { ms: 1200 })
  const logger = memoryLogger()
  const silent = new Worker({ pool, name: 'silent', leaseSeconds: 0.5, heartbeat: false, logger })
  silent.handle(job2, async (check) => { await sleep(check.payload.ms); return null })
  const refused = []
  silent.on('leaseLost', (err) => refused.push(err))
  await silent.start()
  try {
    await waitFor('the late completion is refused', () => refused.length > 0, 6000)
  } finally {
    await silent.stop({ graceMs: 0 })
  }
  assert.ok(refused[0] instanceof LeaseLostError)
  assert.equal(refused[0].checkId, late)
  assert.match(refused[0].reason, /expired|another lease/)
  assert.ok(logger.lines.some((l) => l.includes(`check ${late} (${job2}): lease_lost: `)), logger.lines.join('\n'))
})

test('stop lets running handlers finish within the grace, then releases what it still holds', async () => {
  const job = await workerClass(pool, 'w_stop')
  const [quick, slow] = await scheduleNow(job, 2)
  await pool.query("UPDATE prescient.future_job SET payload = '{\"ms\": 3000}' WHERE id = $1", [slow])
  const worker = new Worker({ pool, name: 'stopping', logger: false })
  const started = new Set()
  const aborted = new Set()
  worker.handle(job, async (check) => {
    started.add(check.id)
    check.signal.addEventListener('abort', () => aborted.add(check.id))
    await sleep(check.payload.ms || 400)
    return null
  })
  await worker.start()
  await waitFor('both have started', () => started.size === 2, 4000)
  const t0 = Date.now()
  await worker.stop({ graceMs: 1000 })
  assert.ok(Date.now() - t0 < 2500, `stop took ${Date.now() - t0} ms`)
  assert.deepEqual((await historyRows(pool, quick)).map((h) => h.outcome), ['done'], 'finished within the grace')
  const released = await pendingRow(pool, slow)
  assert.deepEqual([released.claimed_by, released.attempts, released.check_count], [null, 0, 0], 'given back untouched')
  assert.deepEqual([...aborted], [slow])

  const [after] = await scheduleNow(job, 1)
  await sleep(1500)
  assert.equal((await pendingRow(pool, after)).claimed_by, null, 'a stopped worker takes nothing more')
})

test('start refuses classes that are unknown or the runner\'s, with the database\'s reason', async () => {
  for (const job of ['no_such_class', 'noop']) {
    const worker = new Worker({ pool, name: 'refused', logger: false })
    worker.handle(job, async () => null)
    const err = await worker.start().then(() => null, (e) => e)
    assert.ok(err instanceof RefusedError, String(err))
    assert.match(err.reason, new RegExp(job))
    await worker.stop()
  }
})

test('as the role prescient_worker (its own connections), the worker takes and settles', async () => {
  const job = await workerClass(pool, 'w_role')
  const connection = { connectionString: databaseUrl(), options: '-c role=prescient_worker' }
  const worker = new Worker({ connection, name: 'role', logger: false })
  worker.handle(job, async (check) => new Date(check.dueAt.getTime() + 3600 * 1000))
  const [id] = await scheduleNow(job, 1)
  await worker.start()
  try {
    await waitFor('the check is rescheduled', async () => (await pendingRow(pool, id)).check_count === 1, 4000)
  } finally {
    await worker.stop()
  }
  const probe = new (require('pg').Client)(connection)
  await probe.connect()
  try {
    assert.equal((await probe.query('SELECT current_user AS role')).rows[0].role, 'prescient_worker')
    await assert.rejects(probe.query("UPDATE prescient.future_job SET payload = '{}' WHERE id = $1", [id]),
      /permission denied/)
  } finally {
    await probe.end()
  }
})

// Many due checks, pinned clock, scheduled in one statement.
async function scheduleMany(job, n, at) {
  await pool.query(`SELECT count(*) FROM prescient.schedule_arrays(p_job => array_fill($1::text, ARRAY[$2::int]),
      p_entity_name => array_fill('item'::text, ARRAY[$2::int]), p_entity_key => array_fill('1'::text, ARRAY[$2::int]),
      p_at => array_fill($3::timestamptz, ARRAY[$2::int]), p_now => $3::timestamptz)`, [job, n, at])
}

test('a take asks for what the worker can start soon: fast handlers in batches, slow ones a place at a time', async () => {
  const T = new Date('2031-05-06T10:00:00Z')
  const clock = () => new Date(T.getTime() + 1000)
  const fast = await workerClass(pool, 'w_fast')
  await scheduleMany(fast, 2000, T)
  let counting = countingPool()
  let worker = new Worker({ pool: counting, name: 'fast', concurrency: 2, clock, logger: false })
  worker.handle(fast, async () => null)
  const settled = await worker.drain()
  assert.equal(settled.filter((s) => s.outcome === 'done').length, 2000)
  // Two places: a take per free place would be 1 000 takes at least.
  assert.ok(counting.calls.worker_take <= 40, `2 000 fast checks, 2 places: ${counting.calls.worker_take} takes`)

  const slow = await workerClass(pool, 'w_slow')
  await scheduleMany(slow, 12, T)
  counting = countingPool()
  worker = new Worker({ pool: counting, name: 'slow', concurrency: 2, prefetchMs: 50, clock, logger: false })
  let mostHeld = 0
  worker.handle(slow, async () => {
    await sleep(100)
    const { rows } = await pool.query("SELECT count(*)::int AS n FROM prescient.future_job WHERE job = $1 AND claimed_by = 'slow'", [slow])
    mostHeld = Math.max(mostHeld, rows[0].n)
    return null
  })
  await worker.drain()
  // 2 places, and 100 ms handlers free one place in the 50 ms ahead: 2 + 1 held, and one more whose handler
  // has returned but whose settlement has not committed yet (its lease holds until then): never the 12.
  assert.ok(mostHeld >= 2 && mostHeld <= 4, `12 checks of 100 ms, 2 places: held up to ${mostHeld} at once`)
})

test('a batch handler gets a take\'s checks in one call and answers each', async () => {
  const job = await workerClass(pool, 'w_batchh')
  const T = new Date('2031-05-06T10:00:00Z')
  let now = T
  const clock = () => now
  const ids = []
  for (const kind of ['done', 'next', 'error', 'result', 'bad']) {
    ids.push((await schedule(pool, { job, entityName: 'e', entityKey: kind, at: T, clock })).id)
  }
  const worker = new Worker({ pool, name: 'batchh', clock, logger: false })
  const calls = []
  worker.handleBatch(job, async (checks) => {
    calls.push(checks.map((c) => c.id))
    return checks.map((c) => {
      switch (c.entityKey) {
        case 'next': return new Date(c.dueAt.getTime() + 3600e3)
        case 'error': return new Error('this one failed')
        case 'result': return { result: { n: 1 } }
        case 'bad': return 'soon'
        default: return null
      }
    })
  })
  now = new Date(T.getTime() + 1000)
  const outcome = Object.fromEntries((await worker.drain()).map((s) => [s.id, s.outcome]))
  assert.deepEqual(calls, [ids], 'one call for the five')
  assert.deepEqual(ids.map((id) => outcome[id]), ['done', 'rescheduled', 'retried', 'done', 'retried'])
  assert.equal((await pendingRow(pool, ids[2])).last_error, 'this one failed')
  assert.deepEqual((await historyRows(pool, ids[3]))[0].result, { n: 1 })

  // A batch handler that throws, or answers another number of answers, fails each check of the call.
  const job2 = await workerClass(pool, 'w_batchbad')
  now = T
  const two = []
  for (const key of ['a', 'b']) two.push((await schedule(pool, { job: job2, entityName: 'e', entityKey: key, at: T, clock })).id)
  const short = new Worker({ pool, name: 'batchbad', clock, logger: false })
  short.handleBatch(job2, async () => [null])
  now = new Date(T.getTime() + 1000)
  assert.deepEqual((await short.drain()).map((s) => s.outcome), ['retried', 'retried'])
  assert.match((await pendingRow(pool, two[0])).last_error, /answered 1 answers for 2 checks/)
})

test('a stop gives back at once the checks taken ahead and not started', async () => {
  const job = await workerClass(pool, 'w_ahead')
  await scheduleMany(job, 50, new Date(Date.now() - 2000))
  const logger = memoryLogger()
  const worker = new Worker({ pool, name: 'ahead', concurrency: 1, graceMs: 300, logger })
  let runs = 0
  let blocked
  const started = new Promise((resolve) => { blocked = resolve })
  worker.handle(job, async (check) => {
    if (++runs <= 5) return null // fast: the next take asks for many
    blocked()
    await new Promise((resolve) => check.signal.addEventListener('abort', resolve)) // outlasts the grace
    throw check.signal.reason
  })
  await worker.start()
  await started
  await worker.stop()
  const { rows: [counts] } = await pool.query(`SELECT
      (SELECT count(*)::int FROM prescient.job_history WHERE job = $1 AND outcome = 'done') AS done,
      (SELECT count(*)::int FROM prescient.future_job WHERE job = $1 AND claimed_by IS NULL AND attempts = 0
          AND check_count = 0) AS untouched`, [job])
  assert.deepEqual([counts.done, counts.untouched, runs], [5, 45, 6], logger.lines.join('\n'))
  // How many were taken ahead depends on the handlers' measured times (and so on the machine's load); all of
  // them were given back at once (45 untouched above, counting the running one the grace gave back).
  assert.ok(logger.lines.some((l) => /released (\d+) of \1 check\(s\) \(taken ahead, not started\)/.test(l)),
    logger.lines.join('\n'))
})

// After a failed call the loop tries again at once, then after 250 ms doubling to 1 s: its first try after a
// failover's election comes within 1 s of it. It once waited a flat second after every failure.
test('the loop retries at once, then 250 ms doubling to 1 s', () => {
  const { nextRetryWait } = require('../lib/worker')
  const waits = []
  let wait = null
  for (let i = 0; i < 6; i++) waits.push(wait = nextRetryWait(wait))
  assert.deepEqual(waits, [0, 250, 500, 1000, 1000, 1000])
})
