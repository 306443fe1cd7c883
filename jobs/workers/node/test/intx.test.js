'use strict'

// Settling in the handler's own transaction (check.completeIn / failIn), pinned clock: each case's handler
// writes a ledger row and settles in the same transaction, then commits or not. What the worker does next
// must match: nothing more when the transaction settled the check, the normal path (a failure) when it rolled
// back, never a second settlement, and no lease_lost line but for the check whose lease was really lost.

const test = require('node:test')
const assert = require('node:assert/strict')
const { Worker, schedule, cancel, LeaseLostError, RefusedError } = require('..')
const { newPool, workerClass, memoryLogger, pendingRow, historyRows, deskCalendar, businessDue } = require('./helpers')

const pool = newPool({ max: 8 })
test.after(() => pool.end())

// The worker's own pool, counting the checks it settles itself, by function name.
function countingPool() {
  const sent = {}
  return {
    sent,
    query(text, values) {
      const fn = /prescient\.(worker_complete|worker_fail)/.exec(typeof text === 'string' ? text : text.text)
      if (fn) sent[fn[1]] = (sent[fn[1]] || 0) + values[1].length
      return pool.query(text, values)
    },
    connect: () => pool.connect(),
  }
}

test('a handler settles in its transaction: committed, rolled back, lost, refused', async () => {
  const job = await workerClass(pool, 'intx')
  await pool.query('CREATE TABLE intx_ledger (check_id bigint PRIMARY KEY)')
  const T = new Date('2031-07-08T09:00:00Z')
  let now = T
  const clock = () => now
  const keys = ['done', 'next', 'fail', 'result', 'rolled-back', 'rolled-back-quietly', 'savepoint', 'error-after-commit',
    'cancelled', 'too-big']
  const id = {}
  for (const key of keys) id[key] = (await schedule(pool, { job, entityName: 'e', entityKey: key, at: T, clock })).id
  const counting = countingPool()
  const logger = memoryLogger()
  const worker = new Worker({ pool: counting, name: 'intx', clock, logger })
  const settled = {}
  worker.on('settled', (s) => { (settled[s.id] = settled[s.id] || []).push(s.outcome) })
  const inHandler = {}
  worker.handle(job, async (check) => {
    const client = await pool.connect() // the application's connection, not the worker's
    try {
      await client.query('BEGIN')
      await client.query('INSERT INTO intx_ledger VALUES ($1)', [check.id])
      let settlement
      try {
        switch (check.entityKey) {
          case 'next': settlement = await check.completeIn(client, new Date(check.dueAt.getTime() + 3600e3)); break
          case 'fail': settlement = await check.failIn(client, new Error('the CRM said no')); break
          case 'result': settlement = await check.completeIn(client, { result: { sent: 1 } }); break
          case 'savepoint':
            await client.query('SAVEPOINT s')
            settlement = await check.completeIn(client)
            await client.query('ROLLBACK TO SAVEPOINT s')
            break
          case 'cancelled':
            await cancel(pool, { id: check.id }) // meanwhile, elsewhere
            settlement = await check.completeIn(client)
            break
          case 'too-big': settlement = await check.completeIn(client, { result: 'x'.repeat(70000) }); break
          default: settlement = await check.completeIn(client)
        }
      } catch (err) {
        inHandler[check.entityKey] = err
        throw err
      }
      inHandler[check.entityKey] = settlement
      switch (check.entityKey) {
        case 'rolled-back': throw new Error('the mail server is down')
        case 'rolled-back-quietly':
          await client.query('ROLLBACK')
          return null
        case 'error-after-commit':
          await client.query('COMMIT')
          throw new Error('a late error')
      }
      await client.query('COMMIT')
      return new Date(check.dueAt.getTime() + 60e3) // not sent: the check is settled
    } catch (err) {
      await client.query('ROLLBACK')
      throw err
    } finally {
      client.release()
    }
  })
  now = new Date(T.getTime() + 1000)
  const drained = await worker.drain()
  const ledgered = async (key) =>
    (await pool.query('SELECT 1 FROM intx_ledger WHERE check_id = $1', [id[key]])).rowCount === 1

  for (const key of ['done', 'error-after-commit', 'result']) {
    const h = await historyRows(pool, id[key])
    assert.deepEqual(h.map((r) => [r.outcome, r.finished_by]), [['done', 'intx']], key)
    assert.ok(await ledgered(key), key)
  }
  assert.deepEqual((await historyRows(pool, id.result))[0].result, { sent: 1 })
  const next = await pendingRow(pool, id.next)
  assert.deepEqual([next.check_count, next.claimed_by, next.next_check_at, await ledgered('next')],
    [1, null, new Date(T.getTime() + 1000 + 3600e3), true])
  assert.equal(inHandler.next.outcome, 'rescheduled')
  const fail = await pendingRow(pool, id.fail)
  assert.deepEqual([fail.attempts, fail.last_error, await ledgered('fail')], [1, 'the CRM said no', true])
  // Rolled back after settling: still leased, so the worker failed it, once, with the handler's error.
  const rolled = await pendingRow(pool, id['rolled-back'])
  assert.deepEqual([rolled.attempts, rolled.last_error, await ledgered('rolled-back')], [1, 'the mail server is down', false])
  for (const key of ['rolled-back-quietly', 'savepoint']) {
    const row = await pendingRow(pool, id[key])
    assert.equal(row.attempts, 1, key)
    assert.match(row.last_error, /settlement in its own transaction did not take effect/, key)
  }
  assert.equal(await ledgered('savepoint'), true, 'the savepoint alone rolled back')
  // Cancelled while its handler ran: completeIn rejects, the handler's writes roll back.
  assert.ok(inHandler.cancelled instanceof LeaseLostError, String(inHandler.cancelled))
  assert.equal(inHandler.cancelled.checkId, id.cancelled)
  assert.equal(await ledgered('cancelled'), false)
  assert.deepEqual((await historyRows(pool, id.cancelled)).map((r) => r.outcome), ['cancelled'])
  // Refused (a result over 64 KiB): the transaction is aborted, the worker fails the check with the reason.
  assert.ok(inHandler['too-big'] instanceof RefusedError, String(inHandler['too-big']))
  assert.equal((await pendingRow(pool, id['too-big'])).attempts, 1)

  assert.deepEqual(settled, {
    [id.done]: ['done'], [id.next]: ['rescheduled'], [id.fail]: ['retried'], [id.result]: ['done'],
    [id['rolled-back']]: ['retried'], [id['rolled-back-quietly']]: ['retried'], [id.savepoint]: ['retried'],
    [id['error-after-commit']]: ['done'], [id.cancelled]: ['lease_lost'], [id['too-big']]: ['retried'],
  })
  assert.equal(drained.length, keys.length)
  // The worker sent the failures of the four that did not take effect, nothing for the others.
  assert.deepEqual([counting.sent.worker_complete, counting.sent.worker_fail], [undefined, 4], logger.lines.join('\n'))
  const lostLines = logger.lines.filter((l) => /lease_lost|lease lost/.test(l))
  assert.deepEqual(lostLines.map((l) => l.includes(`check ${id.cancelled} `)), [true], lostLines.join('\n'))
})

test('completeIn refuses what is not an answer or not a client, before it calls anything', async () => {
  const job = await workerClass(pool, 'intx_bad')
  const T = new Date('2031-07-08T09:00:00Z')
  let now = T
  const clock = () => now
  await schedule(pool, { job, entityName: 'e', entityKey: 'k', at: T, clock })
  now = new Date(T.getTime() + 1000)
  const worker = new Worker({ pool, name: 'intx-bad', clock, logger: false })
  const errors = []
  worker.handle(job, async (check) => {
    errors.push(await check.completeIn(pool, 'tomorrow').catch((e) => e))
    errors.push(await check.completeIn(null).catch((e) => e))
    return null
  })
  const [s] = await worker.drain()
  assert.equal(s.outcome, 'done', 'settled the usual way')
  assert.ok(errors.every((e) => e instanceof TypeError), errors.join('; '))
  assert.match(errors[0].message, /expected a Date, null, \{ result \} or \{ calendar, businessDelay \}/)
})

test('completeIn answers in business time; an unknown calendar is a RefusedError naming it', async () => {
  await deskCalendar(pool)
  const job = await workerClass(pool, 'intx_business')
  await pool.query('CREATE TABLE intx_business_ledger (check_id bigint PRIMARY KEY)')
  // A Monday, 15:00:01.250 in Berlin when the worker runs: 4 hours of the desk's open time end on Tuesday.
  const T = new Date('2030-01-07T14:00:00Z')
  let now = T
  const clock = () => now
  const id = {}
  for (const key of ['desk', 'nowhere']) {
    id[key] = (await schedule(pool, { job, entityName: 'e', entityKey: key, at: T, clock })).id
  }
  const worker = new Worker({ pool, name: 'intx-business', clock, logger: false })
  const inHandler = {}
  worker.handle(job, async (check) => {
    const client = await pool.connect()
    try {
      await client.query('BEGIN')
      await client.query('INSERT INTO intx_business_ledger VALUES ($1)', [check.id])
      inHandler[check.entityKey] = await check.completeIn(client, { calendar: check.entityKey, businessDelay: '4h' })
      await client.query('COMMIT')
      return null // not sent: the check is settled
    } catch (err) {
      inHandler[check.entityKey] = err
      await client.query('ROLLBACK')
      throw err
    } finally {
      client.release()
    }
  })
  now = new Date(T.getTime() + 1250)
  const outcome = Object.fromEntries((await worker.drain()).map((s) => [s.id, s.outcome]))
  assert.deepEqual(outcome, { [id.desk]: 'rescheduled', [id.nowhere]: 'retried' })

  const due = await businessDue(pool, 'desk', now, '4h')
  assert.deepEqual(due, new Date('2030-01-08T10:00:02Z'))
  assert.deepEqual([inHandler.desk.outcome, inHandler.desk.nextCheckAt], ['rescheduled', due])
  const desk = await pendingRow(pool, id.desk)
  assert.deepEqual([desk.next_check_at, desk.check_count, desk.claimed_by], [due, 1, null])
  const ledgered = (await pool.query('SELECT check_id FROM intx_business_ledger ORDER BY check_id')).rows
  assert.deepEqual(ledgered.map((r) => r.check_id), [id.desk], 'the refused one\'s writes rolled back')

  // Refused: the handler's transaction rolls back, and the worker fails the check with the handler's error.
  assert.ok(inHandler.nowhere instanceof RefusedError, String(inHandler.nowhere))
  assert.equal(inHandler.nowhere.checkId, id.nowhere)
  assert.match(inHandler.nowhere.reason, new RegExp(`^check ${id.nowhere}: no calendar named '?nowhere`))
  const nowhere = await pendingRow(pool, id.nowhere)
  assert.deepEqual([nowhere.attempts, nowhere.last_error], [1, inHandler.nowhere.message])
})
