'use strict'

// Creates or upgrades the prescient schema from Node, with no prescient binary (docs/workers.md, "The schema
// without the binary"): prescient-bundle.sql beside this package's index.js, a copy of the repository's
// sql/prescient-bundle.sql that a test keeps identical, applied in one transaction. It keeps the binary's
// bookkeeping, so `prescient migrate` and this upgrade after each other; a database newer than the bundle
// is refused (RefusedError) before anything is written.

const fs = require('fs')
const path = require('path')
const { fromDatabaseError } = require('./errors')

const BUNDLE = path.join(__dirname, '..', 'prescient-bundle.sql')

// db: a pg.Pool (a client is taken from it and given back) or a connected pg.Client not in a transaction.
// slotSeconds: the slot resolution of a new database (default 60); on an existing one it must match, or be
// left out. Resolves to { applied: [{ kind, name }], version }.
async function migrate(db, { slotSeconds = null } = {}) {
  const bundle = fs.readFileSync(BUNDLE, 'utf8')
  const isPool = typeof db.connect === 'function' && typeof db.totalCount === 'number'
  const client = isPool ? await db.connect() : db
  try {
    await client.query('BEGIN')
    try {
      await client.query(bundle)
      const { rows } = await client.query('SELECT kind, name FROM pg_temp.prescient_migrate($1::integer)',
        [slotSeconds])
      const { rows: [{ version }] } = await client.query(
        'SELECT max(version)::integer AS version FROM prescient.schema_migrations')
      await client.query('COMMIT')
      return { applied: rows, version }
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {})
      throw fromDatabaseError(err)
    }
  } finally {
    if (isPool) client.release()
  }
}

module.exports = { migrate }
