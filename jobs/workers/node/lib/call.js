'use strict'

// One call of a prescient SQL function on the caller's connection: named arguments (only those given) and
// the database's refusals as typed errors. The enqueue functions, the class declaration and retry share it.

const { fromDatabaseError } = require('./errors')

// A call with named arguments, only those given: an argument left out takes the function's own default
// (p_now's default is the transaction's now(), which NULL would not be). Each entry is
// [parameter, value, cast] or [parameter, value, cast, expression], where the expression uses $? for the
// value's placeholder.
function namedCall(fn, args) {
  const values = []
  const named = []
  for (const [param, value, cast, expression] of args) {
    if (value === undefined) continue
    values.push(value)
    const placeholder = `$${values.length}::${cast}`
    named.push(`${param} => ${expression ? expression.replace('$?', placeholder) : placeholder}`)
  }
  return { text: `${fn}(${named.join(', ')})`, values }
}

async function run(client, text, values, checkId) {
  if (!client || typeof client.query !== 'function') {
    throw new TypeError('expected a pg Client, PoolClient or Pool (the connection of your transaction)')
  }
  try {
    return await client.query(text, values)
  } catch (err) {
    throw fromDatabaseError(err, checkId)
  }
}

// A duration in seconds as an interval argument ($? * interval '1 second').
function secondsArgument(param, seconds) {
  return [param, seconds, 'double precision', "$? * interval '1 second'"]
}

// A check id as the text of a bigint, or a TypeError saying what needed it: ids arrive as strings (node-postgres
// gives int8 so), and a number or a bigint is taken too.
function checkIdText(id, what) {
  if (!(typeof id === 'string' || typeof id === 'bigint' || Number.isSafeInteger(id)) || !/^\d+$/.test(String(id))) {
    throw new TypeError(`${what} needs a check id (a whole number): ${String(id)}`)
  }
  return String(id)
}

module.exports = { namedCall, run, secondsArgument, checkIdText }
