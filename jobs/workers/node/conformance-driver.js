'use strict'

// The conformance driver (the helpers' brief, section 6): the client's own Worker, with one handler for
// every class named, driven by the check's payload. jobs/workers/conformance starts it and judges from the
// database.
//   conformance-driver work --name NAME --classes C1[,C2...] [--concurrency 4] [--batch 50]
//                           [--lease-seconds 2] [--no-heartbeat]
// The database's URL is in PRESCIENT_DATABASE_URL.

const pg = require('pg')
const { Worker } = require('.')

const USAGE = 'usage: conformance-driver work --name NAME --classes C1[,C2...] [--concurrency 4] [--batch 50] ' +
  '[--lease-seconds 2] [--no-heartbeat]'

function parse(argv) {
  const [command, ...rest] = argv
  if (command !== 'work') throw new Error(USAGE)
  const options = { concurrency: 4, batch: 50, leaseSeconds: 2, heartbeat: true }
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
      case '--lease-seconds': options.leaseSeconds = number(value()); break
      case '--no-heartbeat': options.heartbeat = false; break
      default: throw new Error(`unknown option ${flag}\n${USAGE}`)
    }
  }
  if (!options.name || !options.classes || options.classes.length === 0) throw new Error(USAGE)
  return options
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

// The payload contract: record the run, sleep, answer. The ledger is one connection of its own,
// autocommitted; the handlers' inserts take turns on it (pg runs one query at a time per client).
function conformanceHandler(ledger, name) {
  let turn = Promise.resolve()
  const record = (values) => {
    const insert = turn.then(() => ledger.query(
      'INSERT INTO conformance_ledger (check_id, worker, language, due_at, check_count) VALUES ($1, $2, $3, $4, $5)',
      values))
    turn = insert.catch(() => {})
    return insert
  }
  return async (check) => {
    await record([check.id, name, 'node', check.dueAt.toISOString(), check.checkCount])
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

async function main() {
  const options = parse(process.argv.slice(2))
  const connectionString = process.env.PRESCIENT_DATABASE_URL
  if (!connectionString) throw new Error('PRESCIENT_DATABASE_URL is not set')
  const ledger = new pg.Client({ connectionString })
  await ledger.connect()
  ledger.on('error', (err) => process.stderr.write(`ledger connection: ${err.message}\n`))
  const worker = new Worker({
    connectionString,
    name: options.name,
    concurrency: options.concurrency,
    batchSize: options.batch,
    leaseSeconds: options.leaseSeconds,
    heartbeat: options.heartbeat,
  })
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
