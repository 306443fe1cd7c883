'use strict'

// The conformance driver as the conformance harness runs it: a process of its own, one handler for the
// classes named, driven by each check's payload; it records each run in conformance_ledger and stops
// gracefully (exit 0) on SIGTERM.

const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { spawn } = require('node:child_process')
const { schedule } = require('..')
const { newPool, workerClass, waitFor, pendingRow, historyRows } = require('./helpers')

const DRIVER = path.join(__dirname, '..', 'conformance-driver')

test('the conformance driver answers by the payload and exits 0 on SIGTERM', async () => {
  const pool = newPool()
  let driver
  try {
    await pool.query(`CREATE TABLE conformance_ledger (check_id bigint, worker text, language text, due_at timestamptz,
                        check_count integer, started_at timestamptz DEFAULT clock_timestamp())`)
    const job = await workerClass(pool, 'driver')
    const id = {}
    for (const [label, payload] of Object.entries({
      done: {},
      next: { answer: 'next', next_seconds: 30 },
      at: { answer: 'at', at: '2099-01-01T00:00:00Z' },
      error: { answer: 'error', error: 'conformance error: disk full' },
      result: { answer: 'result', result: { kept: [1, 'two'] } },
      slow: { sleep_ms: 1500 },
    })) {
      id[label] = (await schedule(pool, { job, entityName: 'e', entityKey: label, at: new Date(), payload })).id
    }
    let log = ''
    driver = spawn(DRIVER, ['work', '--name', 'node-t1', '--classes', job, '--concurrency', '3', '--batch', '2',
      '--lease-seconds', '2'], { stdio: ['ignore', 'pipe', 'pipe'] })
    driver.stdout.on('data', (d) => { log += d })
    driver.stderr.on('data', (d) => { log += d })
    const exited = new Promise((resolve) => driver.on('exit', (code, signal) => resolve({ code, signal })))

    await waitFor('the slow check has started', async () =>
      (await pool.query('SELECT 1 FROM conformance_ledger WHERE check_id = $1', [id.slow])).rowCount === 1, 8000)
    driver.kill('SIGTERM') // mid-run: the slow handler finishes within the grace period
    assert.deepEqual(await exited, { code: 0, signal: null }, log)

    const ledger = (await pool.query('SELECT check_id, worker, language, check_count FROM conformance_ledger')).rows
    for (const check of Object.values(id)) {
      assert.ok(ledger.some((r) => r.check_id === check && r.worker === 'node-t1' && r.language === 'node'), `${check} in ${JSON.stringify(ledger)}`)
    }
    const outcome = async (check) => (await historyRows(pool, check)).map((h) => h.outcome)
    assert.deepEqual(await outcome(id.done), ['done'])
    assert.deepEqual(await outcome(id.slow), ['done'], 'finished within the grace period')
    assert.deepEqual(await outcome(id.at), ['guard_horizon'])
    assert.deepEqual((await historyRows(pool, id.result))[0].result, { kept: [1, 'two'] })
    assert.equal((await pendingRow(pool, id.next)).check_count, 1)
    assert.equal((await pendingRow(pool, id.error)).last_error, 'conformance error: disk full')
    assert.match(log, new RegExp(`check ${id.slow} \\(${job}\\): done`))
    assert.match(log, /SIGTERM: stopping gracefully/)
  } finally {
    if (driver && driver.exitCode === null) driver.kill('SIGKILL')
    await pool.end()
  }
})

// The ledger once kept the connection it opened at start: after a failover every run failed on it.
test('the conformance driver connects again after its sessions are cut (a failover): a later check is done', async () => {
  const pool = newPool()
  let driver
  try {
    await pool.query(`CREATE TABLE IF NOT EXISTS conformance_ledger (check_id bigint, worker text, language text,
                        due_at timestamptz, check_count integer, started_at timestamptz DEFAULT clock_timestamp())`)
    const job = await workerClass(pool, 'cut')
    let log = ''
    driver = spawn(DRIVER, ['work', '--name', 'node-cut', '--classes', job], { stdio: ['ignore', 'pipe', 'pipe'] })
    driver.stdout.on('data', (d) => { log += d })
    driver.stderr.on('data', (d) => { log += d })
    const exited = new Promise((resolve) => driver.on('exit', (code, signal) => resolve({ code, signal })))
    const done = async (id) => (await historyRows(pool, id)).some((h) => h.outcome === 'done')

    const before = (await schedule(pool, { job, entityName: 'e', entityKey: 'before', at: new Date() })).id
    await waitFor('the check before the cut is done', () => done(before), 20000)
    const { rows } = await pool.query(`SELECT count(pg_terminate_backend(pid))::int AS cut FROM pg_stat_activity
      WHERE datname = current_database() AND pid <> pg_backend_pid()`)
    assert.ok(rows[0].cut >= 3, `sessions cut (the worker's and the ledger's): ${rows[0].cut}`)
    const after = (await schedule(pool, { job, entityName: 'e', entityKey: 'after', at: new Date() })).id
    await waitFor('the check after the cut is done', () => done(after), 10000).catch((err) => {
      throw new Error(`${err.message}\n${log}`)
    })
    driver.kill('SIGTERM')
    assert.deepEqual(await exited, { code: 0, signal: null }, log)
  } finally {
    if (driver && driver.exitCode === null) driver.kill('SIGKILL')
    await pool.end()
  }
})

test('the conformance driver refuses a class that is not a worker class, exit 2', async () => {
  const result = await new Promise((resolve) => {
    const driver = spawn(DRIVER, ['work', '--name', 'node-t2', '--classes', 'noop'], { stdio: ['ignore', 'ignore', 'pipe'] })
    let err = ''
    driver.stderr.on('data', (d) => { err += d })
    driver.on('exit', (code) => resolve({ code, err }))
  })
  assert.equal(result.code, 2, result.err)
  assert.match(result.err, /run by the runner, not by workers/)
})

test('the conformance driver drains the due checks with no-op handlers, or a batch handler, and says the rate', async () => {
  const pool = newPool()
  try {
    for (const flags of [[], ['--batch-handler']]) {
      const job = await workerClass(pool, 'drain')
      await pool.query(`SELECT count(*) FROM prescient.schedule_arrays(p_job => array_fill($1::text, ARRAY[30]),
          p_entity_name => array_fill('e'::text, ARRAY[30]), p_entity_key => array_fill('1'::text, ARRAY[30]),
          p_at => array_fill(now() - interval '1 minute', ARRAY[30]), p_now => now() - interval '1 minute')`, [job])
      const { code, out } = await new Promise((resolve) => {
        const driver = spawn(DRIVER, ['drain', '--classes', job, ...flags], { stdio: ['ignore', 'pipe', 'inherit'] })
        let out = ''
        driver.stdout.on('data', (d) => { out += d })
        driver.on('exit', (exitCode) => resolve({ code: exitCode, out }))
      })
      assert.equal(code, 0, out)
      assert.match(out, /^drained 30 checks in [0-9.]+ s: \d+ checks\/s\n$/, flags.join(' '))
      const { rows } = await pool.query("SELECT count(*)::int AS n FROM prescient.job_history WHERE job = $1 AND outcome = 'done'", [job])
      assert.equal(rows[0].n, 30, flags.join(' '))
    }
  } finally {
    await pool.end()
  }
})
