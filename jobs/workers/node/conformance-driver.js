'use strict'

// The conformance driver: the client's own Worker.
//   conformance-driver work --name NAME --classes C1[,C2...] [--concurrency N] [--batch N] [--prefetch-ms N]
//                           [--lease-seconds 2] [--no-heartbeat]
//   conformance-driver drain --classes C1[,C2...] [--concurrency N] [--batch N] [--prefetch-ms N] [--batch-handler]
// work (jobs/workers/conformance starts it and judges from the database): one handler for every class named,
// driven by the check's payload; SIGTERM stops it gracefully. drain (benchmarks): no-op handlers (or a no-op
// batch handler per class) until nothing is due, then prints the rate on standard output. Options left out
// are the Worker's defaults. The database's URL is in PRESCIENT_DATABASE_URL.

const pg = require('pg')
const { Worker } = require('.')

const USAGE = 'usage: conformance-driver work|drain --classes C1[,C2...] [--name NAME] [--concurrency N] [--batch N] ' +
  '[--prefetch-ms N] [--lease-seconds 2] [--no-heartbeat] [--batch-handler (drain)]'

function parse(argv) {
  const [command, ...rest] = argv
  if (command !== 'work' && command !== 'drain') throw new Error(USAGE)
  const options = { command, name: 'node-driver', leaseSeconds: 2, heartbeat: true, batchHandler: false }
  for (let i = 0; i < rest.length; i++) {
    const flag = rest[i]
    const value = () => {
      if (i + 1 >= rest.length) throw new Error(`${flag} needs a value\n${USAGE}`)
      return rest[++i]
    }
    const number = (text) => {
      const n = Number(text)
      if (!Number.isFinite(n)) throw new Error(`${flag}: not a number: ${text}`)
      return n
    }
    switch (flag) {
      case '--name': options.name = value(); break
      case '--classes': options.classes = value().split(',').filter(Boolean); break
      case '--concurrency': options.concurrency = number(value()); break
      case '--batch': options.batch = number(value()); break
      case '--prefetch-ms': options.prefetchMs = number(value()); break
      case '--batch-handler': options.batchHandler = true; break
      case '--lease-seconds': options.leaseSeconds = number(value()); break
      case '--no-heartbeat': options.heartbeat = false; break
      default: throw new Error(`unknown option ${flag}\n${USAGE}`)
    }
  }
  if (!options.name || !options.classes || options.classes.length === 0) throw new Error(USAGE)
  if (options.batchHandler && command !== 'drain') throw new Error(`--batch-handler is for drain\n${USAGE}`)
  return options
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

// The payload contract: record the run, sleep, answer. The ledger is a pool of one connection of its own,
// autocommitted: the handlers' inserts wait their turn for it, and a connection that breaks (its session cut,
// a failover) is replaced, not kept for every later run to fail on.
function conformanceHandler(ledger, name) {
  return async (check) => {
    await ledger.query(
      'INSERT INTO conformance_ledger (check_id, worker, language, due_at, check_count) VALUES ($1, $2, $3, $4, $5)',
      [check.id, name, 'node', check.dueAt.toISOString(), check.checkCount])
    const payload = check.payload && typeof check.payload === 'object' ? check.payload : {}
    if (payload.sleep_ms) await sleep(Number(payload.sleep_ms))
    switch (payload.answer === undefined ? 'done' : payload.answer) {
      case 'done': return null
      case 'next': return new Date(check.dueAt.getTime() + Number(payload.next_seconds ?? 60) * 1000)
      case 'at': return new Date(payload.at)
      case 'error': throw new Error(payload.error ?? 'conformance error')
      case 'result': return { result: payload.result }
      default: throw new Error(`unknown answer ${JSON.stringify(payload.answer)}`)
    }
  }
}

// No-op handlers until nothing is due; prints the rate.
async function drain(worker, classes, batchHandler) {
  let runs = 0
  const noOp = () => { runs++; return null }
  for (const job of classes) {
    if (batchHandler) worker.handleBatch(job, async (checks) => checks.map(noOp))
    else worker.handle(job, async () => noOp())
  }
  const started = performance.now()
  const settled = await worker.drain()
  const seconds = (performance.now() - started) / 1000
  await worker.close()
  for (const s of settled) {
    if (s.outcome !== 'done') process.stderr.write(`check ${s.id}: ${s.outcome}: ${s.lastError}\n`)
  }
  process.stdout.write(`drained ${runs} checks in ${seconds.toFixed(3)} s: ${Math.round(runs / seconds)} checks/s\n`)
}

async function main() {
  const options = parse(process.argv.slice(2))
  const connectionString = process.env.PRESCIENT_DATABASE_URL
  if (!connectionString) throw new Error('PRESCIENT_DATABASE_URL is not set')
  const worker = new Worker({
    connectionString,
    name: options.name,
    concurrency: options.concurrency,
    batchSize: options.batch,
    prefetchMs: options.prefetchMs,
    leaseSeconds: options.leaseSeconds,
    heartbeat: options.heartbeat,
    logger: options.command === 'drain' ? false : undefined,
  })
  if (options.command === 'drain') return drain(worker, options.classes, options.batchHandler)
  const ledger = new pg.Pool({ connectionString, max: 1 })
  ledger.on('error', (err) => process.stderr.write(`ledger connection: ${err.message}\n`))
  const handler = conformanceHandler(ledger, options.name)
  for (const job of options.classes) worker.handle(job, handler)
  let exitCode = 0
  worker.on('refused', () => { exitCode = 2 }) // the worker stops itself
  worker.once('stopped', async () => {
    await ledger.end().catch(() => {})
    process.exit(exitCode) // a handler still sleeping past the grace holds no check any more
  })
  worker.stopOnSignals(['SIGTERM', 'SIGINT'])
  await worker.start()
}

main().catch((err) => {
  process.stderr.write(`conformance-driver: ${err.message}\n`)
  process.exit(err.code === 'PR400' ? 2 : 1)
})
