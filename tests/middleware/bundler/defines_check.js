'use strict';
// Defines and the process/global shim through the client loader (run by ctest as bundler_defines):
//   node defines_check.js <csgi-bundle> <require.js>
// Each bundle is built by the real middleware (csgi-bundle ROOT TARGET) and evaluated with the loader in
// a fresh vm context (no `process`, no `global`, as a page): process.env.NODE_ENV per mode and --define,
// line numbers kept in stack traces under the URL the loader names each module by (its base + path), the
// shim on (a module's own `let process` still allowed) and off.
const assert = require('assert');
const fs = require('fs');
const os = require('os');
const path = require('path');
const vm = require('vm');
const { execFileSync } = require('child_process');

const [tool, loaderPath] = process.argv.slice(2);
const loader = fs.readFileSync(loaderPath, 'utf8');
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'csgi-defines-'));
const files = {
  'main.js': [
    "var lib = require('./lib');",
    'if (process',
    "  .env.NODE_ENV === 'production') lib.seen.push('prod');",
    "var s = 'process.env.NODE_ENV'; // process.env.NODE_ENV",
    'module.exports = { env: process.env.NODE_ENV, s: s, api: typeof __API__ === "undefined" ? null : __API__,',
    '  proc: typeof process, browser: typeof process === "object" ? process.browser : null,',
    '  global: typeof global === "undefined" ? null : global === globalThis, lib: lib.value, seen: lib.seen,',
    "  line: (function () { try { throw new Error('here'); } catch (e) { return e.stack; } })() };",
  ].join('\n'),
  'lib.js': "let process = 'mine'; const global = 'own';\nexports.value = process + ' ' + global; exports.seen = [];",
};
for (const [f, text] of Object.entries(files)) fs.writeFileSync(path.join(root, f), text);

function run(args, base) {
  const body = execFileSync(tool, [...args, root, '/main.js'], { stdio: ['ignore', 'pipe', 'ignore'] }).toString();
  const ctx = vm.createContext({});
  vm.runInContext(loader, ctx, { filename: 'require.js' });
  if (base) vm.runInContext(`csgiRequire.base(${JSON.stringify(base)})`, ctx);
  vm.runInContext(body, ctx, { filename: 'bundle.js' });
  return vm.runInContext("require('/main.js')", ctx);
}

try {
  const dev = run([]);
  assert.strictEqual(dev.env, 'development');
  assert.strictEqual(dev.s, 'process.env.NODE_ENV', 'strings are left alone');
  assert.deepStrictEqual(Array.from(dev.seen), []);
  assert.strictEqual(dev.proc, 'object');
  assert.strictEqual(dev.browser, true);
  assert.strictEqual(dev.global, true);
  assert.strictEqual(dev.lib, 'mine own', "a module's own process/global bindings");
  assert.match(dev.line, /\/main\.js:8:/, 'the throw on line 8 is reported on line 8: ' + dev.line);

  const prod = run(['--mode', 'production', '--define', '__API__="https://api"']);
  assert.strictEqual(prod.env, 'production');
  assert.deepStrictEqual(Array.from(prod.seen), ['prod']);
  assert.strictEqual(prod.api, 'https://api');
  assert.match(prod.line, /\/main\.js:8:/);

  const off = run(['--no-process-shim'], 'https://example.test/site/bundle/');
  assert.strictEqual(off.env, 'development', 'the define still applies');
  assert.match(off.line, /^\s+at .*https:\/\/example\.test\/site\/bundle\/main\.js:8:/m, off.line);
  assert.strictEqual(off.proc, 'undefined');
  assert.strictEqual(off.global, null);
  console.log('bundler_defines: all checks passed');
} finally {
  fs.rmSync(root, { recursive: true, force: true });
}
