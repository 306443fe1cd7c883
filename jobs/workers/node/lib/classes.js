'use strict'

// A worker class declared by the application itself, with its policy (docs/workers.md, "Declaring a worker
// class"): prescient.declare_worker_class, with prescient_worker's rights only (no schema owner, no prescient
// binary). The database judges the values (PR400, naming the value); this side checks only their types, and
// refuses a field it does not know, so a misspelt one is not silently left out.

const { namedCall, run, secondsArgument } = require('./call')

const COUNTS = ['maxChecks', 'maxAttempts']
const DURATIONS = ['backoffSeconds', 'backoffMaxSeconds', 'timeoutSeconds']

// The policy's fields, checked: { maxChecks, maxAttempts, backoffSeconds, backoffMaxSeconds, timeoutSeconds },
// each left out (or null: left as it is in the database). Throws a TypeError naming the field and the value.
function checkedPolicy(policy, job) {
  if (policy === undefined || policy === null) return {}
  if (typeof policy !== 'object' || Array.isArray(policy)) {
    throw new TypeError(`the policy of ${job} is not an object: ${String(policy)}`)
  }
  for (const [field, value] of Object.entries(policy)) {
    if (value === undefined || value === null) continue
    if (COUNTS.includes(field)) {
      if (!Number.isInteger(value)) throw new TypeError(`${job}: ${field} is not a whole number: ${String(value)}`)
    } else if (DURATIONS.includes(field)) {
      if (typeof value !== 'number' || !Number.isFinite(value)) {
        throw new TypeError(`${job}: ${field} is not a number of seconds: ${String(value)}`)
      }
    } else {
      throw new TypeError(`${job}: unknown policy field ${field} (the fields: ${[...COUNTS, ...DURATIONS].join(', ')})`)
    }
  }
  return policy
}

/**
 * Makes `job` a worker class if no one declared it, and sets the policy fields given (left out or null: left as
 * they are): `maxChecks` (how many runs a check may have that answer "look again"; 0: no limit; the database's
 * default is 5), `maxAttempts` (failed attempts before a dead letter), `backoffSeconds`, `backoffMaxSeconds`,
 * `timeoutSeconds` (whole seconds). `by`: who declared it (default: the database user). Resolves to 'added' or
 * 'known'. A runner's class, a bad value or name is a RefusedError, and nothing is written.
 */
async function declareWorkerClass(client, job, policy = {}) {
  if (typeof job !== 'string' || job === '') throw new TypeError(`declareWorkerClass needs a job class name: ${String(job)}`)
  const { by, ...fields } = policy || {}
  const { maxChecks, maxAttempts, backoffSeconds, backoffMaxSeconds, timeoutSeconds } = checkedPolicy(fields, job)
  const call = namedCall('prescient.declare_worker_class', [
    ['p_job', job, 'text'],
    ['p_max_checks', maxChecks ?? undefined, 'integer'],
    ['p_max_attempts', maxAttempts ?? undefined, 'integer'],
    secondsArgument('p_backoff', backoffSeconds ?? undefined),
    secondsArgument('p_backoff_max', backoffMaxSeconds ?? undefined),
    secondsArgument('p_timeout', timeoutSeconds ?? undefined),
    ['p_by', by ?? undefined, 'text'],
  ])
  const { rows } = await run(client, `SELECT ${call.text} AS status`, call.values)
  return rows[0].status
}

module.exports = { declareWorkerClass, checkedPolicy }
