'use strict'

// The errors the client raises: each names the check (when there is one) and carries the database's
// reason unchanged, so a log line or an alert says what was refused and why.

class PrescientError extends Error {
  constructor(message, { checkId = null, reason = message, code = null, cause } = {}) {
    super(message, cause === undefined ? undefined : { cause })
    this.name = new.target.name
    this.checkId = checkId
    this.reason = reason
    this.code = code
  }
}

// The database refused the call as bad input (SQLSTATE PR400): nothing of the call was written.
class RefusedError extends PrescientError {}

// A pending check already holds the job key (SQLSTATE PR409, schedule with onConflict 'error'), or the check
// retry names is pending already.
class ConflictError extends PrescientError {}

// What the call named does not exist (SQLSTATE PR404): retry of a check the history holds no failure of.
class NotFoundError extends PrescientError {}

// A settlement the database did not accept: the lease ran out and another worker took the check, or the
// check was cancelled or settled meanwhile. The run's answer is lost; the check is not done by this worker.
class LeaseLostError extends PrescientError {
  constructor(checkId, reason) {
    super(`check ${checkId}: lease_lost: ${reason}`, { checkId, reason, code: 'lease_lost' })
  }
}

// Turns a PostgreSQL error raised by prescient's functions into a typed error; any other error is
// returned as it is (a lost connection, a syntax error: not ours to rename).
function fromDatabaseError(err, checkId = null) {
  if (err && err.code === 'PR400') {
    const prefix = checkId == null ? '' : `check ${checkId}: `
    return new RefusedError(`${prefix}refused: ${err.message}`, { checkId, reason: err.message, code: 'PR400', cause: err })
  }
  if (err && err.code === 'PR409') {
    // "a pending check with key 'k' already exists (id 12)": the id of the check that holds the key.
    const holder = /\(id (\d+)\)/.exec(err.message)
    return new ConflictError(err.message, {
      checkId: holder ? holder[1] : checkId, reason: err.message, code: 'PR409', cause: err,
    })
  }
  if (err && err.code === 'PR404') {
    return new NotFoundError(err.message, { checkId, reason: err.message, code: 'PR404', cause: err })
  }
  return err
}

module.exports = { PrescientError, RefusedError, ConflictError, NotFoundError, LeaseLostError, fromDatabaseError }
