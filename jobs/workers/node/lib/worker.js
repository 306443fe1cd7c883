'use strict'

// The worker (docs/workers.md, "A worker's loop"): takes what it can start soon of its classes' due checks
// (its free places, and what its running handlers will free within `prefetchMs`), holds them in order until a
// place is free, runs a handler per check (or a batch handler per take and class; at most `concurrency` calls
// at once), keeps their leases alive, settles the answers that are ready in one call (unless a handler settled
// its check in its own transaction: check.completeIn), and sleeps until the next due time or a NOTIFY
// prescient_worker. Every rule of a check's life is the database's; this side runs handlers and reports.

const { EventEmitter } = require('node:events')
const os = require('node:os')
const pg = require('pg')
const { LeaseLostError, RefusedError, fromDatabaseError } = require('./errors')
const { declareWorkerClass } = require('./classes')
const { checkedPolicy } = require('./policy')
const { workerLog } = require('./log')

const CHANNEL = 'prescient_worker'
const MAX_SLEEP_MS = 60000
// Something is due, yet the take found nothing. Mostly flow control deferred every check the take looked
// at (a take looks at only as many as it asks for): the next take must look at the next ones at once,
// before the reservations this one made lapse (flow_admit honours them for 50 ms). Rows another take has
// locked, or clocks apart, look the same from here; so look again soon for a while, then back off.
const DUE_RETRY_MS = 5
const DUE_RETRY_FOR_MS = 2000
const DUE_BACKOFF_FIRST_MS = 50
const DUE_BACKOFF_MAX_MS = 1000
const ERROR_RETRY_MS = 1000
// After the loop's call failed (a lost connection, a failover): the first try again at once, since a
// failover leaves the pool's sessions stale while a new one would work, then 250 ms doubling to 1 s, so the
// first try after a new leader is elected comes within 1 s of it (docs/operations.md, "High availability").
const RETRY_FIRST_WAIT_MS = 250
const RETRY_MAX_WAIT_MS = 1000

// The wait before the loop's next try after one that waited `lastMs` (null: none failed yet, so at once).
function nextRetryWait (lastMs) {
  return lastMs === null ? 0 : Math.min(Math.max(lastMs * 2, RETRY_FIRST_WAIT_MS), RETRY_MAX_WAIT_MS)
}
const SETTLE_CHUNK = 1000
// A take that could ask for less than half of what the worker can start soon waits this long (or for more
// room) first: a busy worker takes in batches, not a check per handler that ends.
const TAKE_DELAY_MS = 5
// The defaults chosen by measurement (README.md, "Speed").
const DEFAULT_CONCURRENCY = 4
const DEFAULT_BATCH_SIZE = 1000
const DEFAULT_PREFETCH_MS = 100

const SELECT_TAKE = `SELECT id, job, entity_name, entity_key, job_key, group_key, payload, due_at, asked_for_at,
       check_count, attempts, last_error, traceparent, tracestate, lease_token::text AS lease_token, lease_until
  FROM prescient.worker_take($1::text, $2::text[], $3::integer, $4::double precision, $5::timestamptz)`
// How long until the next check may be taken, measured by the same clock as the answer (server's or pinned).
const SELECT_NEXT_DUE = `SELECT extract(epoch FROM prescient.worker_next_due($1::text[], $2::timestamptz)
                              - coalesce($2::timestamptz, clock_timestamp()))::float8 AS seconds`
const SELECT_COMPLETE = `SELECT id, outcome, next_check_at, last_error
  FROM prescient.worker_complete($1::text, $2::bigint[], $3::bigint[], $4::timestamptz[], $5::jsonb[],
                                 $6::timestamptz, $7::text[], $8::text[])`
const SELECT_FAIL = `SELECT id, outcome, next_check_at, last_error
  FROM prescient.worker_fail($1::text, $2::bigint[], $3::bigint[], $4::text[], $5::timestamptz)`
const SELECT_EXTEND = `SELECT id, lease_until, refusal
  FROM prescient.worker_extend($1::text, $2::bigint[], $3::bigint[], $4::double precision, $5::timestamptz)`
const SELECT_RELEASE = 'SELECT prescient.worker_release($1::text, $2::bigint[], $3::bigint[]) AS released'
// Settling in the handler's own transaction (check.completeIn / failIn): the same calls, on the handler's
// connection, with the transaction's id, to learn afterwards whether it committed.
const SELECT_COMPLETE_IN = `SELECT id, outcome, next_check_at, last_error, pg_current_xact_id()::text AS xact
  FROM prescient.worker_complete($1::text, $2::bigint[], $3::bigint[], $4::timestamptz[], $5::jsonb[],
                                 $6::timestamptz, $7::text[], $8::text[])`
const SELECT_FAIL_IN = `SELECT id, outcome, next_check_at, last_error, pg_current_xact_id()::text AS xact
  FROM prescient.worker_fail($1::text, $2::bigint[], $3::bigint[], $4::text[], $5::timestamptz)`
// For each settlement made in a handler's transaction: did that transaction commit, and is the check still
// leased to this worker as it was taken (a settlement in a savepoint rolled back leaves it so)? Read without
// waiting for the handlers' transactions: an open one is 'in progress'.
const SELECT_SETTLED_IN = `SELECT pg_xact_status(x.xact::xid8) AS status,
       EXISTS (SELECT FROM prescient.future_job f WHERE f.id = x.id AND f.claimed_by = $1
                  AND f.check_count = x.check_count AND f.attempts = x.attempts) AS still_leased
  FROM unnest($2::text[], $3::bigint[], $4::integer[], $5::integer[]) WITH ORDINALITY
       AS x(xact, id, check_count, attempts, n)
 ORDER BY x.n`
const NOT_SETTLED_IN = "the handler's settlement in its own transaction did not take effect (the transaction, or " +
  'the savepoint it was made in, rolled back)'

const delay = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

// The error text a failed check keeps: the error's message (what a person reads in the history), never
// with a NUL, which PostgreSQL text cannot hold (the whole call would be refused).
function errorText(err) {
  let text
  if (err instanceof Error) text = err.message || err.name
  else if (typeof err === 'string') text = err
  else {
    try {
      text = JSON.stringify(err)
    } catch {
      text = String(err)
    }
  }
  return String(text || 'error without a message').replace(/\u0000/g, '\\u0000')
}

// A completion as worker_complete takes it: a next time, a result, or a business delay of a calendar; none: done.
function completion({ next = null, result = null, calendar = null, businessDelay = null }) {
  return { kind: 'complete', next, result, calendar, businessDelay }
}

// What a handler's return value means: a Date (look again then), nothing (done), { result } (done, the result
// kept in the history) or { calendar, businessDelay } (look again after that much of the calendar's open time,
// counted by the database from its now: docs/business-time.md, "Answers in business time"). Anything else is a
// mistake in the handler, and fails the check saying so. Whether the calendar and the delay are known and
// well-formed is the database's to judge: its refusal fails that check alone (settle).
function answerOf(value) {
  if (value === null || value === undefined) return completion({})
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) return { kind: 'fail', error: 'the handler answered an invalid Date' }
    return completion({ next: value })
  }
  const has = (key) => Object.prototype.hasOwnProperty.call(value, key)
  if (typeof value === 'object' && (has('calendar') || has('businessDelay'))) {
    // Two strings, and no result beside them (done, or look again?): anything else is the mistake below.
    if (typeof value.calendar === 'string' && typeof value.businessDelay === 'string' && !has('result')) {
      return completion({ calendar: value.calendar, businessDelay: value.businessDelay })
    }
  } else if (typeof value === 'object' && has('result')) {
    if (value.result === undefined || value.result === null) return completion({})
    try {
      return completion({ result: JSON.stringify(value.result) })
    } catch (err) {
      return { kind: 'fail', error: `the handler's result is not JSON: ${errorText(err)}` }
    }
  }
  let shown
  try {
    shown = JSON.stringify(value)
  } catch {
    shown = String(value)
  }
  return {
    kind: 'fail',
    error: `the handler answered ${String(shown).slice(0, 200)}: expected a Date, null, { result } or ` +
      '{ calendar, businessDelay } (two strings)',
  }
}

// worker_complete's arrays for these completions, an element per check. The calendars and business delays go
// only when an answer is in business time, NULL otherwise: a call without one pays nothing for them.
function completionArrays(answers) {
  const inBusinessTime = answers.some((a) => a.calendar !== null)
  return {
    next: answers.map((a) => (a.next ? a.next.toISOString() : null)),
    results: answers.map((a) => a.result),
    calendars: inBusinessTime ? answers.map((a) => a.calendar) : null,
    businessDelays: inBusinessTime ? answers.map((a) => a.businessDelay) : null,
  }
}

// A refusal of the input itself (PR400, or data PostgreSQL cannot store such as a NUL in JSON): splitting the
// batch finds the one answer at fault; a lost connection is not that.
function isInputRefusal(err) {
  return Boolean(err && typeof err.code === 'string' && (err.code === 'PR400' || err.code.startsWith('22')))
}

// The connection or the server went (a failover, a restart): a socket's error or pg's own (no SQLSTATE), a
// connection exception (08) or an operator's shutdown (57P01 to 57P03). Whether the call took effect is
// unknown, and the same call may work on a new connection.
function lostConnection(err) {
  const code = err && err.code
  return typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code) || code.startsWith('08') || /^57P0[1-3]$/.test(code)
}

// One handler call: its answer, or its error as a failure.
async function callOne(fn, check) {
  try {
    return answerOf(await fn(check))
  } catch (err) {
    return { kind: 'fail', error: errorText(err) }
  }
}

// One batch handler call: an answer per check, in their order (an Error among them fails its check alone).
async function callBatch(fn, checks) {
  let answers
  try {
    answers = await fn(checks)
  } catch (err) {
    return checks.map(() => ({ kind: 'fail', error: errorText(err) }))
  }
  if (!Array.isArray(answers) || answers.length !== checks.length) {
    const got = Array.isArray(answers) ? `${answers.length} answers` : typeof answers
    const error = `the batch handler answered ${got} for ${checks.length} checks: expected one answer per check`
    return checks.map(() => ({ kind: 'fail', error }))
  }
  return answers.map((a) => (a instanceof Error ? { kind: 'fail', error: errorText(a) } : answerOf(a)))
}

function idList(held) {
  const shown = held.slice(0, 20).map((h) => `${h.check.id} (${h.check.job})`).join(', ')
  return held.length > 20 ? `${shown}, ... (${held.length} in all)` : shown
}

// A check as a handler gets it; completeIn and failIn settle it in the handler's own transaction.
function checkOf(row, signal, settleIn) {
  return Object.freeze({
    id: row.id,
    job: row.job,
    entityName: row.entity_name,
    entityKey: row.entity_key,
    jobKey: row.job_key,
    groupKey: row.group_key,
    payload: row.payload,
    dueAt: row.due_at,
    askedForAt: row.asked_for_at,
    checkCount: row.check_count,
    attempts: row.attempts,
    lastError: row.last_error,
    traceparent: row.traceparent,
    tracestate: row.tracestate,
    leaseUntil: row.lease_until,
    signal,
    completeIn: (client, answer) => settleIn('complete', client, answer),
    failIn: (client, error) => settleIn('fail', client, error),
  })
}

class Worker extends EventEmitter {
  /**
   * options: pool (a pg.Pool the worker uses, not closed by it) or connectionString / connection (a pg
   * config: the worker makes its own pool, closed by stop()); name; concurrency (4); batchSize (1000);
   * prefetchMs (100); leaseSeconds (30); heartbeat (true); graceMs (10000); clock (() => Date, pinned time
   * for tests); logger ({ info, warn, error }, or false for none).
   */
  constructor(options = {}) {
    super()
    const {
      pool, connectionString, connection, name, concurrency = DEFAULT_CONCURRENCY, batchSize = DEFAULT_BATCH_SIZE,
      prefetchMs = DEFAULT_PREFETCH_MS, leaseSeconds = 30, heartbeat = true, graceMs = 10000, clock = null, logger,
    } = options
    if (!pool && !connectionString && !connection) {
      throw new TypeError('a Worker needs a pool, a connectionString or a connection config')
    }
    for (const [what, value] of [['concurrency', concurrency], ['batchSize', batchSize]]) {
      if (!Number.isInteger(value) || value < 1) throw new TypeError(`${what} must be a whole number from 1: ${value}`)
    }
    if (batchSize > 10000) throw new TypeError(`batchSize must be at most 10000: ${batchSize}`)
    if (typeof prefetchMs !== 'number' || !(prefetchMs >= 0 && prefetchMs <= 60000)) {
      throw new TypeError(`prefetchMs must be from 0 to 60000: ${prefetchMs}`)
    }
    if (typeof leaseSeconds !== 'number' || !(leaseSeconds >= 0.1 && leaseSeconds <= 86400)) {
      throw new TypeError(`leaseSeconds must be from 0.1 to 86400: ${leaseSeconds}`)
    }
    if (clock !== null && typeof clock !== 'function') throw new TypeError('clock must be a function returning a Date')
    this.name = name || `${os.hostname()}:${process.pid}`
    this.concurrency = concurrency
    this.batchSize = batchSize
    this.prefetchMs = prefetchMs
    this.leaseSeconds = leaseSeconds
    this.heartbeat = heartbeat
    this.graceMs = graceMs
    this.clock = clock
    this.log = workerLog(logger, this.name)

    this.connectionConfig = connectionString ? { connectionString } : connection
    this.pool = pool || null
    this.ownsPool = !pool
    this.handlers = new Map() // class -> { fn, batch, policy }
    this.declared = false // the classes registered with a policy have been declared

    // id -> { check, token, controller, started, running, answered, released, lost, settling, inTx, lostInTx }
    // (hold): taken, not yet settled. released: given back, or lost before it started (not to be run);
    // settling: its handler settles it in its transaction (heartbeats leave it alone from then on); inTx:
    // [{ xact, settlement }] of each such settlement; lostInTx: one that answered lease_lost.
    this.held = new Map()
    this.queue = [] // calls taken and waiting for a place, in the order taken: { job, hs: [held...] }
    this.tasks = new Set() // the running handler calls' promises
    this.perCheckMs = null // the handlers' time per check, a moving average (null: none has answered yet)
    this.answers = [] // answers waiting for their settlement call
    this.flushing = null
    this.resending = 0 // answers waiting to be sent again, their call lost with its connection
    this.heartbeatTimer = null
    this.heartbeatInFlight = false
    this.listener = null
    this.loopDone = null
    this.stopping = false
    this.stopped = null
    this.wakePending = false
    this.wakeSleeper = null
  }

  /**
   * Registers the handler of a worker class; the worker takes the checks of the classes it has handlers for.
   * With a `policy` ({ maxChecks, maxAttempts, backoffSeconds, backoffMaxSeconds, timeoutSeconds }, any of them,
   * or {}), start() and the first drain() declare the class (declareWorkerClass, as this worker) and set those
   * fields; without one, the class must be declared already.
   */
  handle(job, handler, policy) {
    return this.register(job, handler, false, policy)
  }

  /**
   * Registers a batch handler: it gets the checks of the class a take brought (up to batchSize) in one call
   * and resolves to one answer per check, in their order (what a handler may return, or an Error to fail
   * that check). If it throws, or answers another number of answers, each check of the call fails. `policy`:
   * as handle's.
   */
  handleBatch(job, handler, policy) {
    return this.register(job, handler, true, policy)
  }

  register(job, fn, batch, policy) {
    if (typeof job !== 'string' || job === '') throw new TypeError('handle needs a job class name')
    if (typeof fn !== 'function') throw new TypeError(`the handler of ${job} is not a function`)
    if (this.loopDone) throw new Error('handlers must be registered before start()')
    if (policy !== undefined) checkedPolicy(policy, job)
    this.handlers.set(job, { fn, batch, policy: policy === undefined ? undefined : { ...policy } })
    return this
  }

  // The classes registered with a policy, declared with it (once per worker): a refusal (a runner's class, a
  // bad value) rejects start() or drain() with a RefusedError before anything is taken.
  async declareClasses() {
    if (this.declared) return
    for (const [job, { policy }] of this.handlers) {
      if (policy === undefined) continue
      const status = await declareWorkerClass(this.pool, job, { ...policy, by: this.name })
      const fields = Object.entries(policy).filter(([, v]) => v !== undefined && v !== null)
      this.log.info(`class ${job}: declared (${status})` +
        (fields.length > 0 ? `, policy ${fields.map(([k, v]) => `${k} ${v}`).join(', ')}` : ''),
      { event: 'declared', job, status, policy: Object.fromEntries(fields) })
    }
    this.declared = true
  }

  get classes() {
    return [...this.handlers.keys()]
  }

  /** How many handler calls are running now. */
  get running() {
    return this.tasks.size
  }

  /**
   * Connects, LISTENs and starts the loop in the background; resolves once it listens. Rejects with a
   * RefusedError when a class is unknown or not a worker class.
   */
  async start() {
    if (this.loopDone) throw new Error('this worker was started already')
    this.requireHandlers()
    this.openPool()
    await this.declareClasses()
    await this.nextDueSeconds() // the classes are checked here, before the worker says it runs
    await this.listen()
    this.startHeartbeat()
    this.log.info(`started: classes ${this.classes.join(', ')}, concurrency ${this.concurrency}, ` +
      `batch ${this.batchSize}, lease ${this.leaseSeconds} s${this.heartbeat ? '' : ', no heartbeat'}`, {
      event: 'started', classes: this.classes, concurrency: this.concurrency, batchSize: this.batchSize,
      leaseSeconds: this.leaseSeconds, heartbeat: this.heartbeat,
    })
    this.loopDone = this.loop()
  }

  /**
   * Runs every check due now (by the clock) until none is left, then resolves to the settlements:
   * [{ id, job, outcome, nextCheckAt, lastError }]. The same take, run, heartbeat and settle as the loop,
   * without LISTEN or sleeping: for tests with a pinned clock, and for a worker run from a scheduler.
   */
  async drain() {
    if (this.loopDone) throw new Error('drain() is for a worker that was not started')
    this.requireHandlers()
    this.openPool()
    await this.declareClasses()
    const settled = []
    const collect = (s) => settled.push(s)
    this.on('settled', collect)
    this.startHeartbeat()
    try {
      let waitingSince = null
      for (;;) {
        const want = this.wanted(waitingSince)
        if (want > 0) {
          waitingSince = null
          if ((await this.take(want)).length > 0) continue
        } else if (want < 0) {
          waitingSince = waitingSince ?? Date.now()
          await this.sleep(TAKE_DELAY_MS)
          continue
        }
        if (this.tasks.size === 0 && this.queue.length === 0 && this.answers.length === 0 && !this.flushing &&
            this.resending === 0) break
        await this.sleep(MAX_SLEEP_MS) // woken when a handler ends or a settlement is made
      }
    } finally {
      this.stopHeartbeat()
      this.off('settled', collect)
    }
    return settled
  }

  /**
   * A graceful stop: takes nothing more, lets running handlers finish within graceMs, settles their
   * answers, releases what is still held (its checks are due again at once, for another worker) and
   * closes the worker's connections. Resolves when all that is done; calling it again returns the same.
   */
  stop({ graceMs = this.graceMs } = {}) {
    if (this.stopped) return this.stopped
    this.stopping = true
    this.wake()
    this.stopped = (async () => {
      if (this.loopDone) await this.loopDone
      const queued = this.queue.flatMap((call) => call.hs).filter((h) => !h.released)
      this.queue = []
      if (queued.length > 0) {
        for (const h of queued) h.released = true
        await this.release(queued, 'taken ahead, not started')
      }
      if (this.tasks.size > 0) {
        const running = [...this.held.values()].filter((h) => h.running).map((h) => h.check.id)
        this.log.info(`stopping: waiting up to ${graceMs} ms for ${this.tasks.size} running check(s): ` +
          running.join(', '), { event: 'stopping', graceMs, checkIds: running })
        let timer
        await Promise.race([
          Promise.allSettled([...this.tasks]),
          new Promise((resolve) => { timer = setTimeout(resolve, graceMs) }),
        ])
        clearTimeout(timer)
      }
      await this.flush()
      const left = [...this.held.values()]
      if (left.length > 0) {
        for (const h of left) {
          h.released = true
          h.controller.abort(new Error('the worker stopped: the check was released'))
        }
        await this.release(left, 'still running when the grace period ended')
      }
      this.stopHeartbeat()
      await this.closeListener()
      if (this.ownsPool && this.pool) {
        await this.pool.end().catch(() => {})
        this.pool = null
      }
      this.log.info('stopped', { event: 'stopped' })
      this.emit('stopped')
    })()
    return this.stopped
  }

  /** Stops gracefully on these signals (once). Returns a function that removes the handlers. */
  stopOnSignals(signals = ['SIGTERM', 'SIGINT']) {
    const onSignal = (signal) => {
      this.log.info(`${signal}: stopping gracefully`, { event: 'signal', signal })
      this.stop().catch((err) => {
        this.log.error(`stop failed: ${err.message}`, { event: 'stop_failed', error: err.message })
      })
    }
    for (const signal of signals) process.once(signal, onSignal)
    return () => {
      for (const signal of signals) process.removeListener(signal, onSignal)
    }
  }

  /** Closes the pool the worker made (after drain()); stop() does this for a started worker. */
  async close() {
    if (this.ownsPool && this.pool) {
      await this.pool.end()
      this.pool = null
    }
  }

  // ---------------------------------------------------------------------------------------------- loop

  async loop() {
    let dueButEmpty = null // since when takes found nothing while a check was due, and the wait now
    let waitingSince = null // since when a small take has waited for more room
    let retryWait = null // the last wait after a failed try (null: the last try went through)
    while (!this.stopping) {
      try {
        this.wakePending = false // a notification from now on means: look again
        const want = this.wanted(waitingSince)
        if (want === 0) {
          await this.sleep(MAX_SLEEP_MS) // until a handler ends
          continue
        }
        if (want < 0) {
          waitingSince = waitingSince ?? Date.now()
          await this.sleep(TAKE_DELAY_MS)
          continue
        }
        waitingSince = null
        const took = await this.take(want)
        retryWait = null
        if (took.length > 0) {
          dueButEmpty = null
          continue
        }
        const seconds = await this.nextDueSeconds()
        let ms
        if (seconds === null || seconds > 0) {
          dueButEmpty = null
          ms = seconds === null ? MAX_SLEEP_MS : Math.min(Math.ceil(seconds * 1000), MAX_SLEEP_MS)
        } else {
          if (!dueButEmpty) dueButEmpty = { since: Date.now(), backoff: DUE_BACKOFF_FIRST_MS }
          if (Date.now() - dueButEmpty.since < DUE_RETRY_FOR_MS) {
            ms = DUE_RETRY_MS
          } else {
            ms = dueButEmpty.backoff
            dueButEmpty.backoff = Math.min(dueButEmpty.backoff * 2, DUE_BACKOFF_MAX_MS)
          }
        }
        await this.sleep(ms)
      } catch (err) {
        if (err instanceof RefusedError) {
          // Not a passing trouble: the classes or options are wrong; retrying cannot help.
          this.log.error(`stopping: ${err.message}`, { event: 'refused', error: err.reason, code: err.code })
          this.emit('refused', err)
          this.stop().catch(() => {}) // it awaits this loop, which ends here
          break
        }
        retryWait = nextRetryWait(retryWait)
        this.log.error(`${err.message}; trying again in ${retryWait} ms`,
          { event: 'loop_error', error: err.message, retryInMs: retryWait })
        await this.sleep(retryWait)
      }
    }
  }

  // How many checks a take should ask for now: what the worker can start soon (its free places, and what
  // the running handlers will have made room for within prefetchMs, by their measured time per check; at
  // most batchSize) less what it holds waiting for a place. 0: no room; negative: some room, but less than
  // half of what could start soon, so wait a little for more (since waitingSince, TAKE_DELAY_MS at most).
  // Without heartbeats nothing is held ahead: a check waiting for a place would lose its lease. With a batch
  // handler, a free place is worth a batch (one call takes what a take brought of its class).
  wanted(waitingSince) {
    const perPlace = [...this.handlers.values()].some((h) => h.batch) ? this.batchSize : 1
    let soon = (this.concurrency - this.tasks.size) * perPlace
    if (this.heartbeat && this.perCheckMs !== null && this.prefetchMs > 0) {
      const ahead = (this.concurrency * this.prefetchMs) / Math.max(this.perCheckMs, 0.001)
      soon += Math.floor(Math.min(this.batchSize, ahead))
    }
    soon = Math.min(soon, this.batchSize)
    let queued = 0
    for (const call of this.queue) queued += call.hs.length
    const want = soon - queued
    if (want <= 0) return 0
    if (want * 2 < soon && (waitingSince === null || Date.now() - waitingSince < TAKE_DELAY_MS)) return -want
    return want
  }

  // Takes up to `limit` due checks and queues them for a place (a call per check, or per class for a batch
  // handler). Resolves to what it took.
  async take(limit) {
    let rows
    try {
      ;({ rows } = await this.pool.query(SELECT_TAKE,
        [this.name, this.classes, limit, this.leaseSeconds, this.now()]))
    } catch (err) {
      throw fromDatabaseError(err)
    }
    if (rows.length === 0) return rows
    const taken = rows.map((row) => this.hold(row))
    if (this.stopping && this.loopDone) {
      // Stopped while the take was under way: give them back untouched.
      await this.release(taken, 'taken while stopping')
      return rows
    }
    this.log.info(`took ${rows.length} check(s): ${idList(taken)}`,
      { event: 'took', count: rows.length, checkIds: rows.map((r) => r.id) })
    const batches = new Map()
    for (const h of taken) {
      const job = h.check.job
      if (!this.handlers.get(job).batch) this.queue.push({ job, hs: [h] })
      else if (batches.has(job)) batches.get(job).push(h)
      else this.queue.push({ job, hs: batches.set(job, [h]).get(job) })
    }
    this.pump()
    return rows
  }

  hold(row) {
    const controller = new AbortController()
    const h = {
      token: row.lease_token, controller, started: false, running: false, answered: false, released: false,
      lost: false, settling: false, inTx: [], lostInTx: null,
    }
    h.check = checkOf(row, controller.signal, (kind, client, value) => this.settleIn(h, kind, client, value))
    this.held.set(h.check.id, h)
    return h
  }

  // Starts the queued calls while there are places (none once stopping: those are given back).
  pump() {
    while (this.tasks.size < this.concurrency && this.queue.length > 0 && !this.stopping) {
      const call = this.queue.shift()
      call.hs = call.hs.filter((h) => !h.released) // lost while it waited
      if (call.hs.length > 0) this.run(call)
    }
  }

  run({ job, hs }) {
    for (const h of hs) {
      h.running = true
      h.started = true
    }
    const { fn, batch } = this.handlers.get(job)
    const started = performance.now()
    const task = (async () => {
      const answers = batch ? await callBatch(fn, hs.map((h) => h.check)) : [await callOne(fn, hs[0].check)]
      const perCheck = (performance.now() - started) / hs.length
      this.perCheckMs = this.perCheckMs === null ? perCheck : 0.7 * this.perCheckMs + 0.3 * perCheck
      hs.forEach((h, i) => this.answered(h, answers[i]))
    })()
    this.tasks.add(task)
    task.finally(() => {
      this.tasks.delete(task)
      this.pump()
      this.wake()
    })
  }

  answered(h, answer) {
    h.running = false
    h.answered = true
    if (h.released) return // its grace ran out, or its lease was lost before it started: its answer is nobody's
    const inTx = h.inTx.length > 0 || h.lostInTx
    if (answer.kind === 'fail' && !inTx) {
      this.log.warn(`check ${h.check.id} (${h.check.job}) failed: ${answer.error}`,
        { event: 'handler_failed', checkId: h.check.id, job: h.check.job, error: answer.error })
    }
    this.answers.push({ h, ...answer })
    this.scheduleFlush()
  }

  // ------------------------------------------------------------------------------------------ settling

  // The answers ready in this turn of the event loop go in one call; those that come while it runs, in the next.
  scheduleFlush() {
    if (this.flushing) return
    this.flushing = (async () => {
      await new Promise((resolve) => setImmediate(resolve))
      while (this.answers.length > 0) {
        const batch = await this.settledInTx(this.answers.splice(0, this.answers.length))
        for (let i = 0; i < batch.length; i += SETTLE_CHUNK) {
          const chunk = batch.slice(i, i + SETTLE_CHUNK)
          await this.settle('complete', chunk.filter((a) => a.kind === 'complete'))
          await this.settle('fail', chunk.filter((a) => a.kind === 'fail'))
        }
      }
    })().catch((err) => {
      // Not the database's answer (those are handled in settle): a listener of 'settled' that threw.
      this.log.error(`settling: ${err && err.message}`, { event: 'settle_error', error: err && err.message })
    }).finally(() => {
      this.flushing = null
      this.wake()
    })
  }

  async flush() {
    while (this.flushing || this.answers.length > 0) {
      if (!this.flushing) this.scheduleFlush()
      await this.flushing
    }
  }

  async settle(kind, answers) {
    if (answers.length === 0) return
    const ids = answers.map((a) => a.h.check.id)
    const tokens = answers.map((a) => a.h.token)
    let rows
    try {
      let result
      if (kind === 'complete') {
        const { next, results, calendars, businessDelays } = completionArrays(answers)
        result = await this.pool.query(SELECT_COMPLETE,
          [this.name, ids, tokens, next, results, this.now(), calendars, businessDelays])
      } else {
        result = await this.pool.query(SELECT_FAIL, [this.name, ids, tokens, answers.map((a) => a.error), this.now()])
      }
      rows = result.rows
    } catch (err) {
      if (isInputRefusal(err) && answers.length > 1) {
        // One answer spoils the call for all: settle them one by one, so only that one is refused.
        for (const a of answers) await this.settle(kind, [a])
        return
      }
      if (isInputRefusal(err) && kind === 'complete') {
        // The database would not take this answer (a result over 64 KiB, JSON it cannot store, an unknown
        // calendar or a malformed business delay): the check fails with the refusal, so its history or its
        // retry says why.
        const a = answers[0]
        this.log.warn(`check ${a.h.check.id} (${a.h.check.job}): its answer was refused: ${err.message}`,
          { event: 'answer_refused', checkId: a.h.check.id, job: a.h.check.job, error: err.message })
        this.answers.push({ h: a.h, kind: 'fail', error: `the answer was refused: ${err.message}` })
        return
      }
      if (lostConnection(err) && !this.stopping) {
        // Sent again after a pause, on a new connection, rather than left to the leases (30 s by default): a
        // call that did take effect is refused then (lease_lost, as its lease is gone), so nothing settles twice.
        // The pause is these answers' own: answers that come meanwhile are settled as they come. A stop begun
        // meanwhile releases them with the rest it holds.
        this.log.warn(`could not ${kind} check(s) ${ids.join(', ')}: ${err.message}; sending again in ` +
          `${ERROR_RETRY_MS} ms`, { event: 'settle_retry', kind, checkIds: ids, error: err.message, retryInMs: ERROR_RETRY_MS })
        this.resending += answers.length
        setTimeout(() => {
          this.resending -= answers.length
          if (this.stopping) return
          this.answers.push(...answers)
          this.scheduleFlush()
        }, ERROR_RETRY_MS).unref()
        return
      }
      // Not settled (the error text itself was refused, or the worker stops): the leases run out and the
      // checks run again, at least once as ever.
      for (const a of answers) this.held.delete(a.h.check.id)
      this.log.error(`could not ${kind} check(s) ${ids.join(', ')}: ${err.message}; ` +
        'they run again when their leases run out', { event: 'settle_failed', kind, checkIds: ids, error: err.message })
      this.emit('settleFailed', fromDatabaseError(err), ids)
      return
    }
    rows.forEach((row, i) => {
      const { h } = answers[i]
      this.held.delete(h.check.id)
      const settlement = {
        id: row.id, job: h.check.job, outcome: row.outcome, nextCheckAt: row.next_check_at, lastError: row.last_error,
      }
      this.logSettlement(settlement)
      if (row.outcome === 'lease_lost') {
        const err = new LeaseLostError(row.id, row.last_error)
        settlement.error = err
        this.emit('leaseLost', err, h.check)
      }
      this.emit('settled', settlement, h.check)
    })
  }

  // check.completeIn / failIn: the settlement on the handler's connection, in its transaction. Resolves to
  // the settlement; a lost lease rejects with a LeaseLostError (so the handler's transaction rolls back), a
  // refused answer with a RefusedError.
  async settleIn(h, kind, client, value) {
    const { id, job } = h.check
    if (!client || typeof client.query !== 'function') {
      throw new TypeError(`check ${id}: ${kind}In needs a pg client (in the handler's transaction)`)
    }
    let sql
    let params
    if (kind === 'complete') {
      const answer = answerOf(value)
      if (answer.kind === 'fail') throw new TypeError(`check ${id}: completeIn: ${answer.error}`)
      sql = SELECT_COMPLETE_IN
      const { next, results, calendars, businessDelays } = completionArrays([answer])
      params = [this.name, [id], [h.token], next, results, this.now(), calendars, businessDelays]
    } else {
      sql = SELECT_FAIL_IN
      params = [this.name, [id], [h.token], [errorText(value)], this.now()]
    }
    h.settling = true
    let row
    try {
      ;[row] = (await client.query(sql, params)).rows
    } catch (err) {
      h.settling = h.inTx.length > 0
      throw fromDatabaseError(err, id)
    }
    const settlement = {
      id: row.id, job, outcome: row.outcome, nextCheckAt: row.next_check_at, lastError: row.last_error,
    }
    if (row.outcome === 'lease_lost') {
      settlement.error = new LeaseLostError(id, row.last_error)
      h.lostInTx = settlement
      throw settlement.error
    }
    if (row.outcome === 'refused') {
      throw new RefusedError(`check ${id}: refused: ${row.last_error}`,
        { checkId: id, reason: row.last_error, code: 'refused' })
    }
    h.inTx.push({ xact: row.xact, settlement })
    return settlement
  }

  // Of the answers whose handlers settled their checks in their own transactions: lets go of each whose
  // settlement committed (nothing sent), or answered lease_lost (the handler was told), and of each whose
  // transaction is still open (left to it). A settlement that did not take effect (rolled back) leaves the
  // check leased: its answer is settled as usual, a failure (the handler's error, or one saying so).
  // Resolves to the answers to settle.
  async settledInTx(answers) {
    const rest = []
    const probed = [] // { a, xact, settlement } of each settlement made in a transaction
    for (const a of answers) {
      const { h } = a
      if (h.lostInTx) {
        this.held.delete(h.check.id)
        this.logSettlement(h.lostInTx)
        this.emit('leaseLost', h.lostInTx.error, h.check)
        this.emit('settled', h.lostInTx, h.check)
      } else if (h.inTx.length > 0) {
        for (const { xact, settlement } of h.inTx) probed.push({ a, xact, settlement })
      } else {
        rest.push(a)
      }
    }
    if (probed.length === 0) return rest
    let rows
    try {
      ;({ rows } = await this.pool.query(SELECT_SETTLED_IN, [this.name, probed.map((p) => p.xact),
        probed.map((p) => p.a.h.check.id), probed.map((p) => p.a.h.check.checkCount),
        probed.map((p) => p.a.h.check.attempts)]))
    } catch (err) {
      const ids = [...new Set(probed.map((p) => p.a.h.check.id))]
      for (const id of ids) this.held.delete(id)
      this.log.error(`could not learn whether the handlers' transactions of check(s) ${ids.join(', ')} committed: ` +
        `${err.message}; left to their leases`, { event: 'settled_in_unknown', checkIds: ids, error: err.message })
      return rest
    }
    const decided = new Set()
    probed.forEach(({ a, settlement }, i) => {
      const { h } = a
      const { status, still_leased: stillLeased } = rows[i]
      if (decided.has(h)) return
      if (status === 'committed' && !stillLeased) {
        this.logSettlement(settlement)
        this.emit('settled', settlement, h.check)
      } else if (status === 'in progress') {
        this.log.warn(`check ${h.check.id} (${h.check.job}): the handler returned before its transaction, which ` +
          'settles the check, ended: left to that transaction (if it rolls back, to the lease)',
        { event: 'transaction_open', checkId: h.check.id, job: h.check.job })
      } else {
        return
      }
      decided.add(h)
      this.held.delete(h.check.id)
    })
    for (const a of new Set(probed.map((p) => p.a))) {
      if (decided.has(a.h)) continue
      a.h.settling = false // leased still: heartbeats cover it again until it is settled
      rest.push(a.kind === 'fail' ? a : { h: a.h, kind: 'fail', error: NOT_SETTLED_IN })
    }
    return rest
  }

  logSettlement({ id, job, outcome, nextCheckAt, lastError }) {
    const what = `check ${id} (${job}): ${outcome}`
    const fields = { event: 'settled', checkId: id, job, outcome }
    if (nextCheckAt) fields.nextCheckAt = nextCheckAt.toISOString()
    if (lastError !== null && lastError !== undefined) fields.error = lastError
    switch (outcome) {
      case 'rescheduled':
        return this.log.info(`${what}, next at ${fields.nextCheckAt}`, fields)
      case 'done':
        return this.log.info(what, fields)
      case 'retried':
        return this.log.warn(`${what} at ${fields.nextCheckAt}: ${lastError}`, fields)
      case 'failed':
        return this.log.error(`${what} (attempts used up, a dead letter): ${lastError}`, fields)
      default: // the guards' endings and lease_lost, with the database's reason
        return this.log.warn(`${what}: ${lastError}`, fields)
    }
  }

  async release(held, why) {
    const ids = held.map((h) => h.check.id)
    for (const id of ids) this.held.delete(id)
    try {
      const { rows } = await this.pool.query(SELECT_RELEASE, [this.name, ids, held.map((h) => h.token)])
      this.log.info(`released ${rows[0].released} of ${ids.length} check(s) (${why}): ${ids.join(', ')}`,
        { event: 'released', released: rows[0].released, checkIds: ids, reason: why })
    } catch (err) {
      this.log.error(`could not release check(s) ${ids.join(', ')}: ${err.message}; their leases run out`,
        { event: 'release_failed', checkIds: ids, error: err.message })
    }
  }

  // ----------------------------------------------------------------------------------------- heartbeats

  startHeartbeat() {
    if (!this.heartbeat || this.heartbeatTimer) return
    this.heartbeatTimer = setInterval(() => this.beat(), (this.leaseSeconds * 1000) / 3)
    this.heartbeatTimer.unref()
  }

  stopHeartbeat() {
    clearInterval(this.heartbeatTimer)
    this.heartbeatTimer = null
  }

  // One worker_extend for the checks held and not answered yet (waiting for a place, or running).
  async beat() {
    if (this.heartbeatInFlight || !this.pool) return
    const held = [...this.held.values()].filter((h) => !h.lost && !h.settling && !h.answered)
    if (held.length === 0) return
    this.heartbeatInFlight = true
    try {
      const { rows } = await this.pool.query(SELECT_EXTEND,
        [this.name, held.map((h) => h.check.id), held.map((h) => h.token), this.leaseSeconds, this.now()])
      rows.forEach((row, i) => {
        const h = held[i]
        // Settled meanwhile (its answer, or its handler's transaction): not news.
        if (row.refusal === null || h.settling || h.answered || this.held.get(h.check.id) !== h) return
        h.lost = true
        const err = new LeaseLostError(row.id, row.refusal)
        if (h.started) {
          this.log.warn(`check ${row.id} (${h.check.job}): lease_lost on heartbeat: ${row.refusal}`,
            { event: 'lease_lost', checkId: row.id, job: h.check.job, started: true, error: row.refusal })
          h.controller.abort(err) // the handler may stop early: its answer will be refused
        } else { // waiting for a place: not to be run
          h.released = true
          this.held.delete(h.check.id)
          this.log.warn(`check ${row.id} (${h.check.job}): lease_lost before it started, not run: ${row.refusal}`,
            { event: 'lease_lost', checkId: row.id, job: h.check.job, started: false, error: row.refusal })
        }
        this.emit('leaseLost', err, h.check)
      })
    } catch (err) {
      const ids = held.map((h) => h.check.id)
      this.log.error(`heartbeat for check(s) ${ids.join(', ')} failed: ${err.message}`,
        { event: 'heartbeat_failed', checkIds: ids, error: err.message })
    } finally {
      this.heartbeatInFlight = false
    }
  }

  // --------------------------------------------------------------------------------- waking and sleeping

  async listen() {
    const client = this.ownsPool ? new pg.Client(this.connectionConfig) : await this.pool.connect()
    if (this.ownsPool) await client.connect()
    client.on('notification', (msg) => {
      if (msg.channel === CHANNEL && this.handlers.has(msg.payload)) this.wake()
    })
    client.on('error', (err) => {
      // The wake-up is a hint: without it the worker still finds its checks by their due times.
      this.log.warn(`the LISTEN connection failed: ${err.message}; reconnecting`,
        { event: 'listen_failed', error: err.message })
      this.dropListener(client, err)
      this.relisten()
    })
    await client.query(`LISTEN ${CHANNEL}`)
    this.listener = client
  }

  dropListener(client, err) {
    if (this.listener !== client) return
    this.listener = null
    if (this.ownsPool) client.end().catch(() => {})
    else client.release(err)
  }

  async relisten() {
    while (!this.stopping && !this.listener) {
      await delay(ERROR_RETRY_MS)
      if (this.stopping) return
      try {
        await this.listen()
        this.wake() // a notification may have been missed meanwhile
      } catch (err) {
        this.log.warn(`LISTEN failed again: ${err.message}`, { event: 'listen_failed', error: err.message })
      }
    }
  }

  async closeListener() {
    const client = this.listener
    if (!client) return
    this.listener = null
    try {
      await client.query(`UNLISTEN ${CHANNEL}`)
    } catch {
      // closing anyway
    }
    if (this.ownsPool) await client.end().catch(() => {})
    else client.release()
  }

  async nextDueSeconds() {
    try {
      const { rows } = await this.pool.query(SELECT_NEXT_DUE, [this.classes, this.now()])
      return rows[0].seconds
    } catch (err) {
      throw fromDatabaseError(err)
    }
  }

  wake() {
    this.wakePending = true
    if (this.wakeSleeper) this.wakeSleeper()
  }

  // Sleeps ms, or until woken (a notification, a handler's end, a settlement, stop); a wake that came
  // before the sleep ends it at once.
  sleep(ms) {
    if (this.wakePending || this.stopping) {
      this.wakePending = false
      return Promise.resolve()
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        this.wakeSleeper = null
        this.wakePending = false
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.wakeSleeper = done
    })
  }

  // ---------------------------------------------------------------------------------------------- misc

  now() {
    return this.clock ? this.clock().toISOString() : null
  }

  requireHandlers() {
    if (this.handlers.size === 0) throw new Error('no handlers: register one with worker.handle(class, handler)')
  }

  openPool() {
    if (this.pool) return
    this.pool = new pg.Pool({ ...this.connectionConfig, max: 3 })
    // An idle connection that breaks is the pool's to replace; unheard, the event would end the process.
    this.pool.on('error', (err) => this.log.warn(`a pooled connection failed: ${err.message}`,
      { event: 'pool_error', error: err.message }))
  }
}

module.exports = { Worker, CHANNEL, nextRetryWait }
