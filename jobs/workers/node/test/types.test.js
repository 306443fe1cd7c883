'use strict'

// The declarations (index.d.ts), a TypeScript service written against them (test/types/orders.ts) and the
// JavaScript example (examples/orders.js, with checkJs), checked by tsc --noEmit --strict with @types/pg and the
// pinned TypeScript from the build directory's node_modules (found through NODE_PATH), as an application would
// import the package: by its name.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { execFileSync } = require('node:child_process')

const PACKAGE = path.join(__dirname, '..')
// The node_modules that holds typescript and @types/pg (the build directory's, or this folder's own).
const NODE_MODULES = path.dirname(path.dirname(require.resolve('typescript/package.json')))

// tsc --noEmit --strict over `sources` ({ name: text }) in a scratch project whose node_modules holds this
// package as prescient-worker and the build's modules, each a link: imports resolve as in an application
// (node16: package.json's "exports", its "types" condition). Resolves to tsc's output ('' when clean).
function typecheck(sources) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prescient-tsc-'))
  try {
    const modules = path.join(dir, 'node_modules')
    fs.mkdirSync(modules)
    for (const entry of fs.readdirSync(NODE_MODULES)) {
      if (!entry.startsWith('.')) fs.symlinkSync(path.join(NODE_MODULES, entry), path.join(modules, entry))
    }
    fs.symlinkSync(PACKAGE, path.join(modules, 'prescient-worker'))
    for (const [name, text] of Object.entries(sources)) fs.writeFileSync(path.join(dir, name), text)
    fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({
      compilerOptions: {
        strict: true, noEmit: true, target: 'es2022', module: 'node16', moduleResolution: 'node16',
        types: ['node'], preserveSymlinks: true, allowJs: true, checkJs: true,
      },
      // The package's own example (JavaScript, checked through its JSDoc) with the sources.
      files: [...Object.keys(sources), 'node_modules/prescient-worker/index.d.ts',
        'node_modules/prescient-worker/examples/orders.js'],
    }))
    return execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', dir, '--pretty', 'false'],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
  } catch (err) {
    return err.stdout || String(err)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

// orders.ts marks the mistakes the declarations must catch with @ts-expect-error: one that compiled would be
// an error too (an unused directive), so this fails as soon as a type grows lax.
test('index.d.ts, a typed service and the example compile under tsc --noEmit --strict; the mistakes do not', () => {
  assert.equal(typecheck({ 'orders.ts': fs.readFileSync(path.join(__dirname, 'types', 'orders.ts'), 'utf8') }), '')
})
