'use strict'

// Retry of a dead letter (docs/workers.md, "Dead letters"): prescient.worker_retry, with prescient_worker's
// rights, puts a worker class's failed check back as pending, due now by the server's clock.

const { run, checkIdText } = require('./call')

/**
 * Puts check `id` back from its latest failure: pending again, due now (the server's clock), its attempts
 * counted afresh. Resolves to the time it is due. Refused: ConflictError (PR409) when the check is pending
 * already or another pending check holds its job key; NotFoundError (PR404) when the history holds no
 * failure of it; RefusedError (PR400) for a runner's class. Nothing is written then.
 */
async function retry(client, id) {
  const checkId = checkIdText(id, 'retry')
  const { rows } = await run(client, 'SELECT prescient.worker_retry($1::bigint) AS due_at', [checkId], checkId)
  return rows[0].due_at
}

module.exports = { retry }
