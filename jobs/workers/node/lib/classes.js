'use strict'

// A worker class declared by the application itself, with its policy (docs/workers.md, "Declaring a worker
// class"): prescient.declare_worker_class, with prescient_worker's rights only (no schema owner, no prescient
// binary). The database judges the values (PR400, naming the value); this side checks only their types
// (lib/policy.js).

const { namedCall, run } = require('./call')
const { checkedPolicy, policyArguments } = require('./policy')

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
  const call = namedCall('prescient.declare_worker_class', [
    ['p_job', job, 'text'],
    ...policyArguments(checkedPolicy(fields, job)),
    ['p_by', by ?? undefined, 'text'],
  ])
  const { rows } = await run(client, `SELECT ${call.text} AS status`, call.values)
  return rows[0].status
}

module.exports = { declareWorkerClass }
