'use strict'

// The schema from Node with no prescient binary: the bundle this package ships is the repository's, it makes
// a new database at the slot asked, leaves one the binary made as it is, and refuses a newer database.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('fs')
const path = require('path')
const pg = require('pg')
const { migrate, RefusedError } = require('..')
const { databaseUrl, newPool } = require('./helpers')

test('the shipped bundle is the repository\'s sql/prescient-bundle.sql', () => {
  const shipped = fs.readFileSync(path.join(__dirname, '..', 'prescient-bundle.sql'), 'utf8')
  const generated = fs.readFileSync(path.join(__dirname, '..', '..', '..', '..', 'sql', 'prescient-bundle.sql'), 'utf8')
  assert.ok(shipped === generated, 'jobs/workers/node/prescient-bundle.sql differs: copy sql/prescient-bundle.sql')
})

test('a new database is made at the slot asked; the binary\'s database is up to date; a newer one is refused', async () => {
  const admin = newPool({ max: 1 })
  const name = `prescient_node_migrate_${process.pid}`
  await admin.query(`DROP DATABASE IF EXISTS ${name}`)
  await admin.query(`CREATE DATABASE ${name}`)
  const url = new URL(databaseUrl())
  url.pathname = `/${name}`
  const fresh = new pg.Client({ connectionString: url.toString() })
  await fresh.connect()
  try {
    const made = await migrate(fresh, { slotSeconds: 30 })
    assert.equal(made.applied.filter((a) => a.kind === 'migration').length, made.version)
    assert.ok(made.applied.some((a) => a.kind === 'functions' && a.name === '072_worker_protocol.sql'))
    const { rows: [{ slot_seconds: slot }] } = await fresh.query('SELECT slot_seconds FROM prescient.settings')
    assert.equal(slot, 30)
    assert.deepEqual((await migrate(fresh)).applied, [])

    // The database with-database.sh made with the binary: nothing to apply.
    assert.deepEqual((await migrate(admin)).applied, [])

    await fresh.query("INSERT INTO prescient.schema_migrations (version, name, checksum) VALUES (9999, '9999_future.sql', 'x')")
    await assert.rejects(migrate(fresh), (err) => err instanceof RefusedError &&
      /newer than this bundle knows/.test(err.message))
  } finally {
    await fresh.end()
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    await admin.end()
  }
})
