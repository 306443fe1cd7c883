'use strict'

// Policies (docs/workers.md, "Declaring a worker class"; docs/sql-api.md, a check's own policy): the fields'
// types are checked here, and a field this side does not know is refused, so a misspelt one is not silently
// left out; the database judges the values (PR400, naming the value).

const { namedCall, run, secondsArgument, checkIdText } = require('./call')

const COUNTS = ['maxChecks', 'maxAttempts']
const DURATIONS = ['backoffSeconds', 'backoffMaxSeconds', 'timeoutSeconds']

// The policy's fields, checked: { maxChecks, maxAttempts, backoffSeconds, backoffMaxSeconds, timeoutSeconds }
// (a check's policy has no timeout), each a number or left out (or null). Throws a TypeError naming the field
// and the value; `what` names the class or the check.
function checkedPolicy(policy, what, { timeout = true } = {}) {
  if (policy === undefined || policy === null) return {}
  if (typeof policy !== 'object' || Array.isArray(policy)) {
    throw new TypeError(`the policy of ${what} is not an object: ${String(policy)}`)
  }
  for (const [field, value] of Object.entries(policy)) {
    if (value === undefined || value === null) continue
    if (COUNTS.includes(field)) {
      if (!Number.isInteger(value)) throw new TypeError(`${what}: ${field} is not a whole number: ${String(value)}`)
    } else if (DURATIONS.includes(field) && (timeout || field !== 'timeoutSeconds')) {
      if (typeof value !== 'number' || !Number.isFinite(value)) {
        throw new TypeError(`${what}: ${field} is not a number of seconds: ${String(value)}`)
      }
    } else {
      const fields = [...COUNTS, ...DURATIONS].filter((f) => timeout || f !== 'timeoutSeconds')
      throw new TypeError(`${what}: unknown policy field ${field} (the fields: ${fields.join(', ')})`)
    }
  }
  return policy
}

// The named arguments of a policy checked by checkedPolicy, those given only (a field left out or null is not
// passed: the function's default, NULL, stands).
function policyArguments({ maxChecks, maxAttempts, backoffSeconds, backoffMaxSeconds, timeoutSeconds }) {
  return [
    ['p_max_checks', maxChecks ?? undefined, 'integer'],
    ['p_max_attempts', maxAttempts ?? undefined, 'integer'],
    secondsArgument('p_backoff', backoffSeconds ?? undefined),
    secondsArgument('p_backoff_max', backoffMaxSeconds ?? undefined),
    secondsArgument('p_timeout', timeoutSeconds ?? undefined),
  ]
}

/**
 * Sets one pending check's own policy, over its class's: `maxChecks`, `maxAttempts`, `backoffSeconds`,
 * `backoffMaxSeconds` (whole seconds). A field left out is cleared: the class's applies to it again (so {}
 * clears them all). Resolves to true, or false when no check with that id is pending. A bad value is a
 * RefusedError, and nothing is written.
 */
async function setCheckPolicy(client, id, policy = {}) {
  const checkId = checkIdText(id, 'setCheckPolicy')
  const fields = checkedPolicy(policy, `check ${checkId}`, { timeout: false })
  const call = namedCall('prescient.set_check_policy', [['p_id', checkId, 'bigint'], ...policyArguments(fields)])
  const { rows } = await run(client, `SELECT ${call.text} AS found`, call.values, checkId)
  return rows[0].found
}

module.exports = { checkedPolicy, policyArguments, setCheckPolicy }
