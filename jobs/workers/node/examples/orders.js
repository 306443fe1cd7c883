'use strict'

// The seed scenario (README.md): an order still unshipped three hours after it was placed gets an email,
// six hours after an escalation, and the checks stop as soon as it ships. test/seed.test.js runs this
// file with a pinned clock. The application's own tables:
//   orders (id text PRIMARY KEY, placed_at timestamptz NOT NULL, shipped_at timestamptz)
//   outbox (order_id text, kind text, sent_at timestamptz, PRIMARY KEY (order_id, kind))

const { schedule } = require('..') // in an application: require('prescient-worker')

const HOUR_MS = 3600 * 1000
const systemClock = () => new Date()

// In the caller's transaction: the order and its check commit together, or neither does.
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

async function shipOrder(client, orderId, { clock = systemClock } = {}) {
  await client.query('UPDATE orders SET shipped_at = $2 WHERE id = $1', [orderId, clock()])
}

// The handler of order_unshipped: it answers when to look again, or null when there is nothing more to
// do. A check may run twice (a worker died after sending): the outbox's key makes a second send a no-op.
function orderUnshipped(pool, { clock = systemClock } = {}) {
  const send = (orderId, kind) =>
    pool.query(
      'INSERT INTO outbox (order_id, kind, sent_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING',
      [orderId, kind, clock()],
    )
  return async (check) => {
    const { rows } = await pool.query('SELECT placed_at, shipped_at FROM orders WHERE id = $1', [check.entityKey])
    const order = rows[0]
    if (!order || order.shipped_at) return null // shipped (or gone): the checks stop
    if (check.checkCount === 0) {
      await send(check.entityKey, 'unshipped_email')
      return new Date(order.placed_at.getTime() + 6 * HOUR_MS) // look again six hours after it was placed
    }
    await send(check.entityKey, 'escalation')
    return null
  }
}

module.exports = { placeOrder, shipOrder, orderUnshipped }
