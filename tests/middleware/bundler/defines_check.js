'use strict';
// Defines and the process/global shim through the client loader (run by ctest as bundler_defines):
//   node defines_check.js <csgi-bundle> <require.js>
// Each bundle is built by the real middleware (csgi-bundle ROOT TARGET) and evaluated with the loader in
// a fresh vm context (no `process`, no `global`, as a page): process.env.NODE_ENV per mode and --define,
// line numbers kept in stack traces under the URL the loader names each module by (its base + path), the
// shim on (a module's own `let process` still allowed) and off; code the mode makes dead (left out of
// production bundles) with each line kept and the bindings it declares still there.
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
    "  line: (function () { try { throw new Error('here'); } catch (e) { return e.stack; } })(),",
    "  dead: require('./dead.js'), esm: require('./esm.js') };",
  ].join('\n'),
  'lib.js': "let process = 'mine'; const global = 'own';\nexports.value = process + ' ' + global; exports.seen = [];",
  'dead.js': [
    'var seen = [], outer = "outer";',
    "if (process.env.NODE_ENV !== 'production') {",
    "  seen.push('dev block');",
    "} else seen.push('prod');",
    "if (process.env.NODE_ENV !== 'production') seen.push('dev statement'); else { seen.push('prod block'); }",
    "var t = process.env.NODE_ENV === 'production' ? 'prod' : (function () {",
    "  return 'dev';",
    '})(), u = process.env.NODE_ENV === "production" ? [1, 2] : (a, b) => (a, b), v = 1;',
    "if (process.env.NODE_ENV !== 'production') {",
    "  seen.push('dev only');",
    '}',
    'function probe() {',
    '  var before = String(outer) + " " + typeof helper;',
    "  if (process.env.NODE_ENV === 'never') {",
    '    var outer = 1;',
    '    function helper() {}',
    '  }',
    '  return before;',
    '}',
    'function helper() {}',
    'exports.seen = seen; exports.t = t; exports.u = u.length; exports.v = v; exports.probe = probe();',
    "exports.line = (function () { try { throw new Error('here'); } catch (e) { return e.stack; } })();",
  ].join('\n'),
  'esm.js': [
    "import { helper } from './helper.js';",
    "if (process.env.NODE_ENV !== 'production') {",
    '  helper(1);',
    '  var devOnly = 1;',
    '}',
    "export const pick = process.env.NODE_ENV !== 'production'",
    '  ? (a, b) => (helper(a), a + b) : (a) => a;',
    "export const line = (function () { try { throw new Error('here'); } catch (e) { return e.stack; } })();",
    'export { devOnly };',
  ].join('\n'),
  'helper.js': 'export function helper(x) { return x; }',
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
  assert.deepStrictEqual(Array.from(dev.dead.seen), ['dev block', 'dev statement', 'dev only']);
  assert.deepStrictEqual([dev.dead.t, dev.dead.u, dev.dead.v], ['dev', 2, 1]);
  assert.strictEqual(dev.dead.probe, 'undefined undefined', 'the var and the function of a dead block are bound');
  assert.match(dev.dead.line, /\/dead\.js:22:/, dev.dead.line);
  assert.strictEqual(dev.esm.pick(1, 2), 3);
  assert.strictEqual(dev.esm.devOnly, 1);
  assert.match(dev.esm.line, /\/esm\.js:8:/, dev.esm.line);

  const prod = run(['--mode', 'production', '--define', '__API__="https://api"']);
  assert.strictEqual(prod.env, 'production');
  assert.deepStrictEqual(Array.from(prod.seen), ['prod']);
  assert.strictEqual(prod.api, 'https://api');
  assert.match(prod.line, /\/main\.js:8:/);
  const deadText = execFileSync(tool, ['--mode', 'production', root, '/dead.js'], { stdio: ['ignore', 'pipe', 'ignore'] })
    .toString();
  assert.ok(!/dev block|dev statement|dev only|return 'dev'|\(a, b\) =>/.test(deadText), 'dead code left out: ' + deadText);
  assert.deepStrictEqual(Array.from(prod.dead.seen), ['prod', 'prod block']);
  assert.deepStrictEqual([prod.dead.t, prod.dead.u, prod.dead.v], ['prod', 2, 1]);
  assert.strictEqual(prod.dead.probe, 'undefined undefined', 'the var and the function of a dead block are still bound');
  assert.match(prod.dead.line, /\/dead\.js:22:/, 'each line kept: ' + prod.dead.line);
  assert.strictEqual(prod.esm.pick(1, 2), 1);
  assert.strictEqual(prod.esm.devOnly, undefined, 'the exported var of a dead block is still declared');
  assert.match(prod.esm.line, /\/esm\.js:8:/, prod.esm.line);

  const off = run(['--no-process-shim'], 'https://example.test/site/bundle/');
  assert.strictEqual(off.env, 'development', 'the define still applies');
  assert.match(off.line, /^\s+at .*https:\/\/example\.test\/site\/bundle\/main\.js:8:/m, off.line);
  assert.strictEqual(off.proc, 'undefined');
  assert.strictEqual(off.global, null);
  console.log('bundler_defines: all checks passed');
} finally {
  fs.rmSync(root, { recursive: true, force: true });
}
