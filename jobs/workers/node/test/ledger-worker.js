'use strict'

// A worker process for the exactly-once kill test (killtest.test.js): its handler writes a ledger row per
// check and completes the check in the same transaction. SIGTERM stops it; the test kills it with SIGKILL.
//   node ledger-worker.js CLASS NAME         (the database is PRESCIENT_DATABASE_URL)
// With PRESCIENT_KILL_TEST_SETTLE=separate the handler commits its row, then returns null, as a handler that
// settles by returning does: the kill test must fail then (a run the killed worker had not settled yet runs
// again, and its row is there twice).

const pg = require('pg')
const { Worker } = require('..')

async function main([job, name]) {
  const connectionString = process.env.PRESCIENT_DATABASE_URL
  const separate = process.env.PRESCIENT_KILL_TEST_SETTLE === 'separate'
  // A connection per handler, and the worker's own pool beside it. Lease 2 s: what the killed worker held is
  // taken again soon after.
  const concurrency = 8
  const pool = new pg.Pool({ connectionString, max: concurrency })
  pool.on('error', () => {})
  const worker = new Worker({ connectionString, name, concurrency, leaseSeconds: 2 })
  worker.handle(job, async (check) => {
    if (separate) {
      await pool.query('INSERT INTO kill_ledger (check_id, worker) VALUES ($1, $2)', [check.id, name])
      return null
    }
    const client = await pool.connect()
    try {
      await client.query('BEGIN')
      await client.query('INSERT INTO kill_ledger (check_id, worker) VALUES ($1, $2)', [check.id, name])
      await check.completeIn(client)
      await client.query('COMMIT')
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {})
      throw err
    } finally {
      client.release()
    }
    return null
  })
  worker.once('stopped', () => pool.end().then(() => process.exit(0)))
  worker.stopOnSignals(['SIGTERM'])
  await worker.start()
}

main(process.argv.slice(2)).catch((err) => {
  process.stderr.write(`ledger-worker: ${err.stack || err}\n`)
  process.exit(1)
})
