'use strict'

// prescient's worker protocol for Node (docs/workers.md): enqueue checks in the application's own
// transaction, and run the checks of worker classes in the application's own service.

const { schedule, cancel, reschedule, cronAdd } = require('./lib/enqueue')
const { declareWorkerClass } = require('./lib/classes')
const { setCheckPolicy } = require('./lib/policy')
const { retry } = require('./lib/retry')
const { Worker } = require('./lib/worker')
const { migrate } = require('./lib/migrate')
const { PrescientError, RefusedError, ConflictError, NotFoundError, LeaseLostError } = require('./lib/errors')

module.exports = {
  migrate,
  schedule,
  cancel,
  reschedule,
  cronAdd,
  declareWorkerClass,
  setCheckPolicy,
  retry,
  Worker,
  PrescientError,
  RefusedError,
  ConflictError,
  NotFoundError,
  LeaseLostError,
}
