// The seed scenario's handler as a TypeScript service writes it, checked by test/types.test.js with
// tsc --noEmit --strict against index.d.ts (never run). Each @ts-expect-error is a mistake the declarations
// must catch: if one compiled, tsc would fail with "Unused '@ts-expect-error' directive".
import { Pool, PoolClient } from 'pg'
import {
  Check, ConflictError, LogFields, Logger, NotFoundError, RefusedError, Settlement, Worker, declareWorkerClass, retry,
  schedule, setCheckPolicy,
} from 'prescient-worker'

interface OrderPayload {
  orderId: string
  placedAt: string
}

const HOUR_MS = 3600 * 1000

export async function placeOrder(client: PoolClient, orderId: string, placedAt: Date): Promise<string> {
  const scheduled = await schedule<OrderPayload>(client, {
    job: 'order_unshipped',
    entityName: 'order',
    entityKey: orderId,
    at: new Date(placedAt.getTime() + 3 * HOUR_MS),
    jobKey: `order_unshipped:${orderId}`,
    payload: { orderId, placedAt: placedAt.toISOString() },
    priority: 2,
  })
  return scheduled.id
}

// Escalated after 4 hours of the support desk's open time; a page at once if the desk is open, else at its
// next opening (no time given: now).
export async function escalateTicket(client: PoolClient, ticketId: string, openedAt: Date): Promise<void> {
  await schedule(client, { job: 'escalate', entityName: 'ticket', entityKey: ticketId, at: openedAt,
    calendar: 'support', businessDelay: '4h' })
  await schedule(client, { job: 'page', entityName: 'ticket', entityKey: ticketId, calendar: 'support' })
}

// A structured logger of the application's (pino's, say, which takes the fields first) as the worker's.
const appLogger = {
  info: (fields: object, message: string) => console.log(JSON.stringify({ level: 'info', message, ...fields })),
  warn: (fields: object, message: string) => console.log(JSON.stringify({ level: 'warn', message, ...fields })),
  error: (fields: object, message: string) => console.log(JSON.stringify({ level: 'error', message, ...fields })),
}
const logger: Logger = {
  info: (message, fields) => appLogger.info(fields, message),
  warn: (message, fields) => appLogger.warn(fields, message),
  error: (message, fields: LogFields) => appLogger.error({ check: fields.checkId, ...fields }, message),
}

export function orderWorker(pool: Pool): Worker {
  const worker = new Worker({ pool, name: 'orders-1', logger })
  // A check runs at most max_checks times, 5 by default; this class's policy says 3.
  worker.handle<OrderPayload>('order_unshipped', async (check: Check<OrderPayload>) => {
    const placedAt = new Date(check.payload.placedAt)
    const client = await pool.connect()
    try {
      await client.query('BEGIN')
      await client.query('INSERT INTO outbox (order_id, kind) VALUES ($1, $2)', [check.payload.orderId, 'email'])
      const settlement: Settlement = await check.completeIn(client, new Date(placedAt.getTime() + 6 * HOUR_MS))
      await client.query('COMMIT')
      return settlement.outcome === 'done' ? null : undefined
    } catch (err) {
      await client.query('ROLLBACK')
      throw err
    } finally {
      client.release()
    }
  }, { maxChecks: 3, maxAttempts: 5, backoffSeconds: 60 })
  worker.handleBatch<OrderPayload>('order_digest', async (checks) =>
    checks.map((c) => (c.payload.orderId === '' ? new Error('no order') : { result: { seen: c.checkCount } })))
  // Looked at again in the support desk's open time: 4 hours after the first run, then a business day after each.
  worker.handle<OrderPayload>('order_support', async (check) =>
    ({ calendar: 'support', businessDelay: check.checkCount === 0 ? '4h' : '1bd' }))
  worker.on('settled', (settlement, check) => {
    console.log(settlement.id, settlement.outcome, check.job)
  })
  return worker
}

export async function mistakes(pool: Pool, check: Check<OrderPayload>): Promise<void> {
  // @ts-expect-error priority is 0..9
  await schedule(pool, { job: 'j', entityName: 'e', entityKey: 1, afterSeconds: 5, priority: 10 })
  // @ts-expect-error the payload does not match the type the call names
  await schedule<OrderPayload>(pool, { job: 'j', entityName: 'e', entityKey: 1, afterSeconds: 5, payload: { id: 1 } })
  // @ts-expect-error at and afterSeconds exclude each other
  await schedule(pool, { job: 'j', entityName: 'e', entityKey: 1, at: new Date(), afterSeconds: 5 })
  // @ts-expect-error a business delay needs a calendar to count it in
  await schedule(pool, { job: 'j', entityName: 'e', entityKey: 1, afterSeconds: 5, businessDelay: '4h' })
  // @ts-expect-error a business delay counts from at or from now, not after afterSeconds
  await schedule(pool, { job: 'j', entityName: 'e', entityKey: 1, calendar: 'office', businessDelay: '4h', afterSeconds: 5 })
  // @ts-expect-error the payload's type has no such field
  console.log(check.payload.customer)
  const untyped = check as unknown as Check
  // @ts-expect-error an undeclared payload is unknown, not any: it must be narrowed first
  console.log(untyped.payload.orderId)
  // @ts-expect-error a policy field that does not exist
  await declareWorkerClass(pool, 'j', { maxCheck: 3 })
  // @ts-expect-error a logger has info, warn and error
  const worker = new Worker({ pool, logger: { info: (message: string) => console.log(message) } })
  // @ts-expect-error a handler answers a Date, null, undefined, { result } or { calendar, businessDelay }
  worker.handle('j', async () => 'done')
  // @ts-expect-error an answer in business time names its delay
  worker.handle('j', async () => ({ calendar: 'support' }))
  // @ts-expect-error an answer is done with a result or looks again in business time, not both
  await check.completeIn(pool, { result: 1, calendar: 'support', businessDelay: '4h' })
  const status: 'added' | 'known' = await declareWorkerClass(pool, 'j', { timeoutSeconds: 30 })
  const dueAt: Date = await retry(pool, check.id)
  const pending: boolean = await setCheckPolicy(pool, check.id, { maxChecks: 0 })
  // @ts-expect-error a check's policy has no timeout (the class's has)
  await setCheckPolicy(pool, check.id, { timeoutSeconds: 30 })
  console.log(pending)
  const refusals = [RefusedError, ConflictError, NotFoundError]
  console.log(status, dueAt, refusals.length)
}
