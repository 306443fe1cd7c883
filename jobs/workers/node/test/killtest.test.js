'use strict'

// Effects exactly once (issue 58): a worker process whose handler writes a ledger row per check and completes
// the check in the same transaction (test/ledger-worker.js) is killed with SIGKILL mid-run, among 10 000
// checks; a second worker finishes the rest. Every check must have exactly one ledger row and one history
// row: no effect lost, none twice. (PRESCIENT_KILL_TEST_SETTLE=separate makes the handler settle by returning,
// after committing its row: then this test fails, with rows twice.)

const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { spawn } = require('node:child_process')
const { newPool, workerClass } = require('./helpers')

const CHECKS = 10000
const KILL_AFTER = CHECKS / 4 // ledger rows: well into the run, with checks held and answers on the way
const WORKER = path.join(__dirname, 'ledger-worker.js')
// A worker fails the test when what it does stands still this long. A stall, not a speed: how long the run
// takes depends on the machine and on what runs beside it (the suite runs the four languages' tests at once).
const STALL_MS = 15000

// Waits until goal(count()) while `worker` makes progress: fails when it exits, or when the count stands still
// for STALL_MS, saying where it stood and what the worker logged.
async function waitWhileMoving(what, count, goal, worker) {
  let seen = await count()
  let since = Date.now()
  while (!goal(seen)) {
    if (worker.exitCode !== null || worker.signalCode !== null || Date.now() - since > STALL_MS) {
      throw new Error(`waited for ${what}: stood at ${seen} for ${Math.round((Date.now() - since) / 1000)} s; ` +
        `worker exit ${worker.exitCode ?? worker.signalCode}; its log:\n${worker.log}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
    const now = await count()
    if (now !== seen) {
      seen = now
      since = Date.now()
    }
  }
}

function startWorker(job, name) {
  const child = spawn(process.execPath, [WORKER, job, name], { stdio: ['ignore', 'ignore', 'pipe'] })
  child.log = ''
  child.stderr.on('data', (d) => { child.log += d })
  child.exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })))
  return child
}

test('a worker killed mid-run leaves each effect exactly once', { timeout: 230000 }, async (t) => {
  const pool = newPool()
  const children = []
  try {
    const job = await workerClass(pool, 'exactly_once')
    await pool.query('CREATE TABLE kill_ledger (check_id bigint NOT NULL, worker text NOT NULL)') // no key: a second row shows
    await pool.query(`SELECT count(*) FROM prescient.schedule_arrays(p_job => array_fill($1::text, ARRAY[$2::int]),
        p_entity_name => array_fill('ledger'::text, ARRAY[$2::int]), p_entity_key => array_fill('1'::text, ARRAY[$2::int]),
        p_at => array_fill(now() - interval '1 minute', ARRAY[$2::int]), p_now => now() - interval '1 minute')`, [job, CHECKS])
    const count = async (sql, values = []) => Number((await pool.query(sql, values)).rows[0].count)
    const began = Date.now()

    const first = startWorker(job, 'first')
    children.push(first)
    await waitWhileMoving(`${KILL_AFTER} ledger rows`, () => count('SELECT count(*) FROM kill_ledger'),
      (rows) => rows >= KILL_AFTER, first)
    first.kill('SIGKILL')
    await first.exited
    const atKill = await count('SELECT count(*) FROM kill_ledger')
    const heldAtKill = await count("SELECT count(*) FROM prescient.future_job WHERE job = $1 AND claimed_by = 'first'", [job])
    assert.ok(atKill < CHECKS, 'the first worker finished before it was killed')

    const second = startWorker(job, 'second')
    children.push(second)
    await waitWhileMoving('no check left', () => count('SELECT count(*) FROM prescient.future_job WHERE job = $1', [job]),
      (left) => left === 0, second)
    second.kill('SIGTERM')
    assert.deepEqual(await second.exited, { code: 0, signal: null }, second.log)

    const ledger = (await pool.query('SELECT count(*)::int AS rows, count(DISTINCT check_id)::int AS checks FROM kill_ledger')).rows[0]
    const history = (await pool.query(`SELECT count(*)::int AS rows, count(DISTINCT id)::int AS checks,
        count(*) FILTER (WHERE outcome = 'done')::int AS done,
        count(*) FILTER (WHERE finished_by = 'first')::int AS first, count(*) FILTER (WHERE finished_by = 'second')::int AS second
      FROM prescient.job_history WHERE job = $1`, [job])).rows[0]
    const strays = await count(`SELECT count(*) FROM kill_ledger l
        FULL JOIN (SELECT id FROM prescient.job_history WHERE job = $1) h ON h.id = l.check_id
       WHERE l.check_id IS NULL OR h.id IS NULL`, [job])
    t.diagnostic(`killed after ${atKill} ledger rows, ${heldAtKill} checks leased to it; settled by the killed ` +
      `worker ${history.first}, by the second ${history.second}; ledger ${ledger.rows} rows of ${ledger.checks} ` +
      `checks; ${Date.now() - began} ms`)
    assert.ok(history.first > 0 && history.second > 0, 'the kill was not mid-run')
    assert.deepEqual(ledger, { rows: CHECKS, checks: CHECKS }, 'an effect lost, or made twice')
    assert.deepEqual([history.rows, history.checks, history.done, strays], [CHECKS, CHECKS, CHECKS, 0])
    assert.doesNotMatch(second.log, /lease_lost|lease lost/, 'the worker settled, or heartbeat, a check its handler had settled')
  } finally {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    await pool.end()
  }
})
