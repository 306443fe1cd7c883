'use strict'

// Installed as a Node team adds a dependency: the package packed (npm pack) and installed into an application
// of its own (npm install ./prescient-worker-0.1.0.tgz), or installed from the checkout's folder with
// install-links in the application's .npmrc; installed again (the next npm install must keep it a copy), then
// the application's own process, with no NODE_PATH, requires it and runs a check through its own pg.
// npm works from the build's cache (build.sh's npm ci filled it), fetching only what is not there.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { execFileSync } = require('node:child_process')
const { newPool } = require('./helpers')

const PACKAGE = path.join(__dirname, '..')

function npm(args, cwd) {
  const buildDir = process.env.PRESCIENT_WORKERS_BUILD_DIR
  if (!buildDir) throw new Error('PRESCIENT_WORKERS_BUILD_DIR is not set: npm\'s cache is the build\'s')
  return execFileSync('npm', [...args, '--prefer-offline', '--no-audit', '--no-fund', '--loglevel', 'error'], {
    cwd, encoding: 'utf8', env: { ...process.env, npm_config_cache: path.join(buildDir, 'node', '.npm-cache') },
  })
}

// The application's service: declares its class with a policy, enqueues in its transaction, drains.
const SERVICE = `'use strict'
const pg = require('pg')
const { Worker, schedule } = require('prescient-worker')

async function main() {
  const pool = new pg.Pool({ connectionString: process.env.PRESCIENT_DATABASE_URL })
  const T = new Date('2030-05-06T07:00:00Z')
  const worker = new Worker({ pool, name: 'shop-1', clock: () => T, logger: false })
  // A check runs at most max_checks times, 5 by default.
  worker.handle('shop_reminder', async (check) => ({ result: { hello: check.payload.to } }), { maxChecks: 5 })
  await worker.drain() // declares the class
  await schedule(pool, { job: 'shop_reminder', entityName: 'cart', entityKey: 'c-1', at: T,
    payload: { to: 'ann' }, clock: () => new Date(T.getTime() - 60000) })
  const settled = await worker.drain()
  console.log(JSON.stringify({ settled: settled.map((s) => s.outcome), pg: require.resolve('pg') }))
  await pool.end()
}
main().catch((err) => { console.error(err); process.exit(1) })
`

// An application in dir/name, as a TypeScript-minded one starts (its Node types pinned: @types/pg asks for any).
function application(dir, name, npmrc) {
  const app = path.join(dir, name)
  fs.mkdirSync(app)
  fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({
    name, version: '1.0.0', private: true, devDependencies: { '@types/node': '18.19.130' },
  }))
  if (npmrc) fs.writeFileSync(path.join(app, '.npmrc'), npmrc)
  return app
}

// After the application's next npm install: the package is a copy with pg beside it, and runs a check.
async function runsACheck(app, pool, job) {
  npm(['install'], app)
  const installed = path.join(app, 'node_modules', 'prescient-worker')
  assert.ok(!fs.lstatSync(installed).isSymbolicLink(), 'a copy, not a link into the checkout')
  assert.ok(fs.existsSync(path.join(installed, 'prescient-bundle.sql')), 'the bundle ships for migrate')
  assert.ok(fs.existsSync(path.join(app, 'node_modules', '@types', 'pg', 'index.d.ts')), '@types/pg comes with it')
  assert.ok(!fs.existsSync(path.join(installed, 'test')), 'the tests do not ship')

  fs.writeFileSync(path.join(app, 'service.js'), SERVICE.replaceAll('shop_reminder', job))
  const env = { ...process.env }
  delete env.NODE_PATH // the application's own node_modules, nothing else
  const out = JSON.parse(execFileSync(process.execPath, ['service.js'], { cwd: app, env, encoding: 'utf8' }))
  assert.deepEqual(out.settled, ['done'])
  assert.equal(out.pg, path.join(fs.realpathSync(app), 'node_modules', 'pg', 'lib', 'index.js'))
  const { rows } = await pool.query('SELECT outcome, result, finished_by FROM prescient.job_history WHERE job = $1', [job])
  assert.deepEqual(rows, [{ outcome: 'done', result: { hello: 'ann' }, finished_by: 'shop-1' }])
}

test('npm pack, npm install of the tarball, the next npm install: the application runs a check', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prescient-install-'))
  const pool = newPool()
  try {
    const [{ filename }] = JSON.parse(npm(['pack', '--json', '--pack-destination', dir], PACKAGE))
    const app = application(dir, 'shop')
    npm(['install', path.join('..', filename)], app)
    const manifest = JSON.parse(fs.readFileSync(path.join(app, 'package.json'), 'utf8'))
    assert.equal(manifest.dependencies['prescient-worker'], `file:../${filename}`)
    await runsACheck(app, pool, 'shop_tarball')
  } finally {
    await pool.end()
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('a file: dependency on the folder, install-links in the application\'s .npmrc: it stays a copy', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prescient-install-'))
  const pool = newPool()
  try {
    const app = application(dir, 'shop', 'install-links=true\n')
    npm(['install', PACKAGE], app)
    const manifest = JSON.parse(fs.readFileSync(path.join(app, 'package.json'), 'utf8'))
    assert.match(manifest.dependencies['prescient-worker'], /^file:/)
    await runsACheck(app, pool, 'shop_folder')
  } finally {
    await pool.end()
    fs.rmSync(dir, { recursive: true, force: true })
  }
})
