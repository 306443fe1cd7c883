'use strict'

// The seed scenario (README.md): an order still unshipped three hours after it was placed gets an email,
// six hours after an escalation, and the checks stop as soon as it ships. test/seed.test.js runs this
// file with a pinned clock. The application's own tables:
//   orders (id text PRIMARY KEY, placed_at timestamptz NOT NULL, shipped_at timestamptz)
//   outbox (order_id text, kind text, sent_at timestamptz, PRIMARY KEY (order_id, kind))

const { schedule } = require('prescient-worker') // this package by its own name, as in an application

const HOUR_MS = 3600 * 1000
const systemClock = () => new Date()

// In the caller's transaction: the order and its check commit together, or neither does.
/** @param {import('pg').ClientBase} client @param {string} orderId @param {{ clock?: () => Date }} [options] */
async function placeOrder(client, orderId, { clock = systemClock } = {}) {
  const placedAt = clock()
  await client.query('INSERT INTO orders (id, placed_at) VALUES ($1, $2)', [orderId, placedAt])
  await schedule(client, {
    job: 'order_unshipped',
    entityName: 'order',
    entityKey: orderId,
    at: new Date(placedAt.getTime() + 3 * HOUR_MS),
    jobKey: `order_unshipped:${orderId}`,
    clock,
  })
}

/** @param {import('pg').ClientBase} client @param {string} orderId @param {{ clock?: () => Date }} [options] */
async function shipOrder(client, orderId, { clock = systemClock } = {}) {
  await client.query('UPDATE orders SET shipped_at = $2 WHERE id = $1', [orderId, clock()])
}

// The handler of order_unshipped. Exactly once: the outbox row and the check's settlement commit in one
// transaction, or neither does (a worker killed before the commit leaves both undone, and the check runs
// again). A check runs at most max_checks times, 5 by default: a fifth run that answers a next time ends it
// (guard_max_checks; `prescient jobs set order_unshipped --max-checks N` changes it). This one runs twice.
/**
 * @param {import('pg').Pool} pool
 * @param {{ clock?: () => Date }} [options]
 * @returns {import('prescient-worker').Handler}
 */
function orderUnshipped(pool, { clock = systemClock } = {}) {
  return async (check) => {
    const client = await pool.connect()
    try {
      await client.query('BEGIN')
      const { rows } = await client.query('SELECT placed_at, shipped_at FROM orders WHERE id = $1', [check.entityKey])
      const order = rows[0]
      if (!order || order.shipped_at) {
        await check.completeIn(client, null) // shipped (or gone): nothing to send, and no next check
      } else if (check.checkCount === 0) {
        await client.query('INSERT INTO outbox (order_id, kind, sent_at) VALUES ($1, $2, $3)',
          [check.entityKey, 'unshipped_email', clock()])
        await check.completeIn(client, new Date(order.placed_at.getTime() + 6 * HOUR_MS)) // look again at 6 h
      } else {
        await client.query('INSERT INTO outbox (order_id, kind, sent_at) VALUES ($1, $2, $3)',
          [check.entityKey, 'escalation', clock()])
        await check.completeIn(client, null) // escalated: done
      }
      await client.query('COMMIT')
    } catch (err) {
      await client.query('ROLLBACK') // a LeaseLostError too: another run of the check makes the writes
      throw err
    } finally {
      client.release()
    }
  }
}

module.exports = { placeOrder, shipOrder, orderUnshipped }
