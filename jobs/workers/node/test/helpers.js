'use strict'

// What the tests share: the database with-database.sh made for this run, worker classes of their own,
// transactions, a logger that keeps its lines, and waiting for a condition with a deadline.

const pg = require('pg')

function databaseUrl() {
  const url = process.env.PRESCIENT_DATABASE_URL
  if (!url) {
    throw new Error('PRESCIENT_DATABASE_URL is not set: run the tests through jobs/workers/with-database.sh')
  }
  return url
}

function newPool(extra = {}) {
  const pool = new pg.Pool({ connectionString: databaseUrl(), max: 5, ...extra })
  pool.on('error', () => {}) // a test's own queries report their errors
  return pool
}

let classes = 0
// A worker class no other test uses (the tests of a file share its database).
async function workerClass(pool, prefix) {
  const name = `${prefix}_${process.pid}_${++classes}`
  await pool.query('SELECT prescient.job_class_add($1, true)', [name])
  return name
}

async function inTransaction(pool, work) {
  const client = await pool.connect()
  try {
    await client.query('BEGIN')
    const result = await work(client)
    await client.query('COMMIT')
    return result
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {})
    throw err
  } finally {
    client.release()
  }
}

// Keeps each event: `lines` as text (level and message), `events` with the structured fields.
function memoryLogger() {
  const lines = []
  const events = []
  const keep = (level) => (message, fields) => {
    lines.push(`${level} ${message}`)
    events.push({ level, message, fields })
  }
  return { lines, events, info: keep('info'), warn: keep('warn'), error: keep('error') }
}

async function waitFor(what, predicate, timeoutMs = 10000) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await predicate()
    if (value) return value
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

// The pending row and the history rows of a check, as the owner sees them.
async function pendingRow(pool, id) {
  const { rows } = await pool.query(
    'SELECT next_check_at, check_count, attempts, last_error, claimed_by FROM prescient.future_job WHERE id = $1', [id])
  return rows[0] || null
}

async function historyRows(pool, id) {
  const { rows } = await pool.query(
    `SELECT outcome, check_count, attempts, last_error, finished_by, result
       FROM prescient.job_history WHERE id = $1 ORDER BY history_id`, [id])
  return rows
}

// The calendar of the business-time tests: 'desk', weekdays 09:00 to 17:00 in Berlin (calendar_set needs the
// schema's owner, who made the test database).
async function deskCalendar(pool) {
  const day = ['09:00-17:00']
  await pool.query("SELECT prescient.calendar_set('desk', 'Europe/Berlin', $1::jsonb)",
    [JSON.stringify({ hours: { mon: day, tue: day, wed: day, thu: day, fri: day } })])
}

// When the database puts a check that answered `delay` of `calendar`'s open time at `now`: business_after,
// rounded up to the slot grid as the settlement rounds every answer (slot_for).
async function businessDue(pool, calendar, now, delay) {
  const { rows } = await pool.query(
    `SELECT prescient.slot_for(prescient.business_after($1, $2, $3), $2, s.slot_seconds) AS due
       FROM prescient.settings s`, [calendar, now, delay])
  return rows[0].due
}

// The W3C Trace Context example: a caller's trace, its span as the parent id.
const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'

module.exports = {
  databaseUrl, newPool, workerClass, inTransaction, memoryLogger, waitFor, pendingRow, historyRows, deskCalendar,
  businessDue, TRACEPARENT,
}
