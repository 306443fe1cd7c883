'use strict'

// The worker's log: one call per event to the logger given, a message and its fields ({ event, worker,
// checkId, job, outcome, ... }); by default one line per event on the console's error stream, even for an
// error whose text spans lines.

const test = require('node:test')
const assert = require('node:assert/strict')
const { Worker, schedule } = require('..')
const { newPool, workerClass, memoryLogger } = require('./helpers')

const pool = newPool()
test.after(() => pool.end())

const T = new Date('2030-08-09T10:00:00Z')
const clock = () => T

// Checks due at T, answered by their payload's `answer`: done, next (an hour on) or fail (an error of two lines).
async function answeringWorker(logger) {
  const job = await workerClass(pool, 'log')
  const worker = new Worker({ pool, name: 'logging-1', clock, logger })
  worker.handle(job, async (check) => {
    if (check.payload.answer === 'fail') throw new Error('the carrier said 503\nretry later')
    return check.payload.answer === 'next' ? new Date(T.getTime() + 3600 * 1000) : null
  })
  const ids = {}
  for (const answer of ['done', 'next', 'fail']) {
    ids[answer] = (await schedule(pool, { job, entityName: 'order', entityKey: answer, at: T, payload: { answer },
      clock: () => new Date(T.getTime() - 60000) })).id
  }
  return { job, worker, ids }
}

test('a structured logger gets each event as a message and its fields', async () => {
  const logger = memoryLogger()
  const { job, worker, ids } = await answeringWorker(logger)
  await worker.drain()
  const fieldsOf = (event, checkId) => logger.events.find((e) => e.fields.event === event &&
    (checkId === undefined || e.fields.checkId === checkId))
  assert.ok(logger.events.every((e) => e.fields.worker === 'logging-1' && typeof e.fields.event === 'string'),
    JSON.stringify(logger.events))

  const took = fieldsOf('took')
  assert.equal(took.level, 'info')
  assert.deepEqual([...took.fields.checkIds].sort(), Object.values(ids).sort())
  assert.equal(took.fields.count, 3)

  assert.deepEqual(fieldsOf('settled', ids.done).fields, { event: 'settled', worker: 'logging-1', checkId: ids.done,
    job, outcome: 'done' })
  assert.deepEqual(fieldsOf('settled', ids.next).fields, { event: 'settled', worker: 'logging-1', checkId: ids.next,
    job, outcome: 'rescheduled', nextCheckAt: '2030-08-09T11:00:00.000Z' })
  const retried = fieldsOf('settled', ids.fail)
  assert.equal(retried.level, 'warn')
  assert.equal(retried.fields.outcome, 'retried')
  assert.equal(retried.fields.error, 'the carrier said 503\nretry later', 'the fields carry the text as it is')
  assert.deepEqual(fieldsOf('handler_failed', ids.fail).fields,
    { event: 'handler_failed', worker: 'logging-1', checkId: ids.fail, job, error: 'the carrier said 503\nretry later' })
  assert.match(fieldsOf('settled', ids.done).message, new RegExp(`^prescient worker logging-1: check ${ids.done} \\(${job}\\): done$`))
})

test('the default logger writes one line per event on the console\'s error stream', async () => {
  const written = []
  const original = console.error
  console.error = (...args) => written.push(args.join(' '))
  try {
    const { worker, ids } = await answeringWorker(undefined)
    await worker.drain()
    assert.ok(written.length >= 5, written.join('\n')) // took, a failure, three settlements
    for (const line of written) {
      assert.match(line, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (info|warn|error) prescient worker logging-1: /)
      assert.ok(!line.includes('\n'), `one line an event: ${JSON.stringify(line)}`)
    }
    assert.ok(written.some((l) => l.includes(`check ${ids.fail} (`) && l.includes('503\\nretry later')), written.join('\n'))
  } finally {
    console.error = original
  }
})

test('a logger without info, warn and error is refused when the worker is made', () => {
  assert.throws(() => new Worker({ pool, logger: { info() {}, warn() {} } }), /logger\.error is not a function/)
  assert.throws(() => new Worker({ pool, logger: console.log }), /logger\.info is not a function/)
})
