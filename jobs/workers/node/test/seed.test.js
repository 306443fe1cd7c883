'use strict'

// The seed scenario with a pinned clock: the order is placed at T; the worker runs at T+3h (the email is
// sent, the next check is at T+6h) and at T+6h (the escalation, the check is done); a second order shipped
// at T+1h has its check at T+3h end with nothing sent. No sleeping: every call takes the pinned time.

const fs = require('node:fs')
const path = require('node:path')
const test = require('node:test')
const assert = require('node:assert/strict')
const { Worker } = require('..')
const { placeOrder, shipOrder, orderUnshipped } = require('../examples/orders')
const { newPool, inTransaction, memoryLogger, pendingRow, historyRows } = require('./helpers')

const T = new Date('2030-01-07T09:00:00Z')
const hours = (h) => new Date(T.getTime() + h * 3600 * 1000)

test('the seed scenario: email at 3 h, escalation at 6 h, nothing once shipped', async () => {
  const pool = newPool()
  try {
    await pool.query('SELECT prescient.job_class_add($1, true)', ['order_unshipped'])
    await pool.query(`CREATE TABLE orders (id text PRIMARY KEY, placed_at timestamptz NOT NULL, shipped_at timestamptz);
                      CREATE TABLE outbox (order_id text, kind text, sent_at timestamptz, PRIMARY KEY (order_id, kind))`)
    let now = T
    const clock = () => now
    const outbox = async () =>
      (await pool.query('SELECT order_id, kind, sent_at FROM outbox ORDER BY sent_at, order_id')).rows
    const logger = memoryLogger()
    // The worker's own calls, counted: each run settles in its handler's transaction, so it sends none.
    let sent = 0
    const workerPool = {
      query: (text, values) => {
        if (/worker_(complete|fail)/.test(text)) sent++
        return pool.query(text, values)
      },
      connect: () => pool.connect(),
    }
    const worker = new Worker({ pool: workerPool, name: 'seed-worker', clock, logger })
    worker.handle('order_unshipped', orderUnshipped(pool, { clock }))

    await inTransaction(pool, (client) => placeOrder(client, 'A-1', { clock }))
    await inTransaction(pool, (client) => placeOrder(client, 'B-2', { clock }))
    const ids = Object.fromEntries((await pool.query(
      'SELECT entity_key, id FROM prescient.future_job WHERE job = $1', ['order_unshipped'])).rows
      .map((r) => [r.entity_key, r.id]))

    now = hours(1)
    await inTransaction(pool, (client) => shipOrder(client, 'B-2', { clock }))
    assert.deepEqual(await worker.drain(), [], 'nothing is due an hour in')

    now = new Date(hours(3).getTime() - 1000)
    assert.deepEqual(await worker.drain(), [], 'a second before three hours, nothing is due: never early')

    now = hours(3)
    const at3 = await worker.drain()
    assert.deepEqual(at3.map((s) => [s.id, s.outcome]).sort(), [[ids['A-1'], 'rescheduled'], [ids['B-2'], 'done']])
    assert.deepEqual(at3.find((s) => s.id === ids['A-1']).nextCheckAt, hours(6))
    assert.deepEqual(await outbox(), [{ order_id: 'A-1', kind: 'unshipped_email', sent_at: hours(3) }])
    const pending = await pendingRow(pool, ids['A-1'])
    assert.deepEqual(pending.next_check_at, hours(6))
    assert.equal(pending.check_count, 1)
    assert.equal(pending.claimed_by, null, 'the lease ends with the settlement')
    assert.deepEqual((await historyRows(pool, ids['B-2'])).map((h) => h.outcome), ['done'])

    now = new Date(hours(6).getTime() - 1000)
    assert.deepEqual(await worker.drain(), [], 'not before six hours')

    now = hours(6)
    const at6 = await worker.drain()
    assert.deepEqual(at6.map((s) => [s.id, s.outcome]), [[ids['A-1'], 'done']])
    assert.deepEqual(await outbox(), [
      { order_id: 'A-1', kind: 'unshipped_email', sent_at: hours(3) },
      { order_id: 'A-1', kind: 'escalation', sent_at: hours(6) },
    ])
    assert.equal(await pendingRow(pool, ids['A-1']), null)
    const history = await historyRows(pool, ids['A-1'])
    assert.deepEqual(history.map((h) => [h.outcome, h.check_count, h.finished_by]), [['done', 2, 'seed-worker']])
    assert.ok(logger.lines.some((l) => l.includes(`check ${ids['A-1']} (order_unshipped): done`)), logger.lines.join('\n'))
    assert.equal(sent, 0, 'the worker settled a check its handler had settled')
  } finally {
    await pool.end()
  }
})

test('the README shows the seed scenario as examples/orders.js has it', () => {
  const example = fs.readFileSync(path.join(__dirname, '..', 'examples', 'orders.js'), 'utf8')
  const readme = fs.readFileSync(path.join(__dirname, '..', 'README.md'), 'utf8')
  assert.ok(readme.includes(example.slice(example.indexOf('const HOUR_MS'), example.indexOf('module.exports'))))
})
