'use strict';
// The ramda corpus against Node itself (run by ctest as bundler_ramda):
//   node ramda_check.js <csgi-bundle> <corpus prefix holding node_modules/ramda> <require.js>
// For entries under ramda's src/: (1) the bundle's module set equals Object.keys(require.cache) after
// require(entry) in a fresh Node; (2) a script prints exactly the same through the bundle (the client
// loader in a vm context) as through plain require; (3) subtraction: entry E requested with the loaded
// set of F holds exactly closure(E) - closure(F), and F then E in one context behaves as plain Node;
// plus 304 revalidation, an already-held entry answering without a request, and a missing module's error.
const assert = require('assert');
const fs = require('fs');
const path = require('path');
const vm = require('vm');
const { execFileSync } = require('child_process');
const { BundleServer, bundlePaths } = require('./bundle_server.js');

const [tool, corpus, loaderPath] = process.argv.slice(2);
const root = fs.realpathSync(corpus);
const loader = fs.readFileSync(loaderPath, 'utf8');
const SRC = 'node_modules/ramda/src/';

// The same script text runs against plain Node and against the bundle. `R` is the entry's export.
const scripts = {
  'index.js': `print(R.map(function (x) { return x * 2; }, [1, 2, 3]));
    print(R.pipe(R.filter(function (n) { return n % 2; }), R.map(R.inc), R.sum)([1, 2, 3, 4, 5]));
    print(R.toString({ a: [1, 'x', null], b: R.range(0, 3) }));
    print(R.groupBy(function (s) { return s.length; }, ['a', 'bb', 'cc', 'd']));
    print(R.sortBy(R.prop('n'), [{ n: 3 }, { n: 1 }, { n: 2 }]));
    print(Object.keys(R).length);`,
  'map.js': `print(R(function (x) { return x + 1; }, [1, 2, 3]));
    print(R(function (x) { return x * 10; }, { a: 1, b: 2 }));
    print(R(String)([7, 8]));`,
  'pipe.js': `print(R(Math.abs, function (x) { return x * 3; }, String)(-4));
    print(R(function (a, b) { return a + b; }, function (x) { return [x, x]; })(2, 5));
    print(R.length);`,
  'toString.js': `print(R({ a: 1, b: [true, 'two', null, undefined], c: new Date(0) }));
    print(R(new Set([1, 2])));
    print(R(function f() {}) .length > 0);
    print(R('quote " and \\\\ backslash'));`,
};
const entries = Object.keys(scripts);

function nodeClosure(entry) {
  const code = `require(${JSON.stringify(path.join(root, SRC, entry))});` +
    `process.stdout.write(JSON.stringify(Object.keys(require.cache)))`;
  const keys = JSON.parse(execFileSync(process.execPath, ['-e', code], { cwd: root }));
  return new Set(keys.map((k) => path.relative(root, k)));
}

function nodeOutput(entry) {
  const code = `var out = []; var print = function (v) { out.push(typeof v === 'string' ? v : JSON.stringify(v)); };
    var R = require(${JSON.stringify(path.join(root, SRC, entry))});
    (function (R, print) { ${scripts[entry]} })(R, print);
    process.stdout.write(out.join('\\n'));`;
  return execFileSync(process.execPath, ['-e', code], { cwd: root }).toString();
}

// A browser-like context: the loader, with its transport going to the in-process server.
function newContext(server, log) {
  const ctx = vm.createContext({});
  vm.runInContext(loader, ctx, { filename: 'require.js' });
  ctx.__fetch = (url) => server.request(url).then((r) => {
    log.push({ url, status: r.status, modules: bundlePaths(r.body), bytes: r.bytes });
    return r.body;
  });
  vm.runInContext('csgiRequire.fetchText = function (url) { return __fetch(url); };', ctx);
  return ctx;
}

function runInContext(ctx, entry) {
  ctx.__out = [];
  vm.runInContext(`(function (R, print) { ${scripts[entry]} })(require(${JSON.stringify('/' + SRC + entry)}),
    function (v) { __out.push(typeof v === 'string' ? v : JSON.stringify(v)); });`, ctx);
  return Array.from(ctx.__out).join('\n');
}

function setEq(a, b, what) {
  const extra = [...a].filter((x) => !b.has(x)), missing = [...b].filter((x) => !a.has(x));
  assert.deepStrictEqual({ extra, missing }, { extra: [], missing: [] }, what);
}

async function main() {
  const server = new BundleServer(tool, root);
  let checks = 0;
  const closures = {}, outputs = {};
  for (const e of entries) {
    closures[e] = nodeClosure(e);
    outputs[e] = nodeOutput(e);
  }
  assert.strictEqual(closures['index.js'].size, 367, 'ramda 0.31.3 index.js closure');

  for (const e of entries) {
    // (1) module set
    const res = await server.request('/' + SRC + e);
    assert.strictEqual(res.status, 200, res.body.slice(0, 300));
    const mods = bundlePaths(res.body);
    assert.strictEqual(new Set(mods).size, mods.length, 'each module once');
    setEq(new Set(mods), closures[e], `module set of ${e} vs Node's require.cache`);
    assert.strictEqual(res.headers['x-bundle-modules'], String(mods.length));
    // 304
    const again = await server.request('/' + SRC + e, res.headers.etag);
    assert.strictEqual(again.status, 304);
    // (2) behaviour through the bundle evaluated directly, and through the loader's async path
    const ctx = vm.createContext({});
    vm.runInContext(loader, ctx);
    vm.runInContext(res.body, ctx, { filename: e + '.bundle.js' });
    assert.strictEqual(runInContext(ctx, e), outputs[e], `output of ${e}`);
    checks += 3;
  }

  // (3) subtraction, through the loader (which computes the loaded set itself)
  const pairs = [['map.js', 'index.js'], ['map.js', 'pipe.js'], ['pipe.js', 'toString.js'], ['index.js', 'map.js']];
  for (const [f, e] of pairs) {
    const log = [];
    const ctx = newContext(server, log);
    await vm.runInContext(`csgiRequire.async(${JSON.stringify('/' + SRC + f)})`, ctx);
    await vm.runInContext(`csgiRequire.async(${JSON.stringify('/' + SRC + e)})`, ctx);
    const expected = new Set([...closures[e]].filter((x) => !closures[f].has(x)));
    if (expected.size === 0) {
      // E came with F: the loader answers from what it holds, without a request.
      assert.strictEqual(log.length, 1, 'no request for a module delivered with ' + f);
      log.push({ url: '(none)', modules: [], bytes: 0 });
    }
    assert.strictEqual(log.length, 2);
    if (expected.size) assert.match(log[1].url, /\?e=[0-9a-f]{12}&have=[A-Za-z0-9_-]+$/);
    setEq(new Set(log[1].modules), expected, `closure(${e}) - closure(${f})`);
    assert.strictEqual(runInContext(ctx, f), outputs[f], `output of ${f} after ${f} then ${e}`);
    assert.strictEqual(runInContext(ctx, e), outputs[e], `output of ${e} after ${f} then ${e}`);
    // Held already: answered without a request.
    await vm.runInContext(`csgiRequire.async(${JSON.stringify('/' + SRC + e)})`, ctx);
    assert.strictEqual(log.length, 2, 'no request for a held module');
    console.log(`ok: ${f} (${log[0].modules.length} modules, ${log[0].bytes} B) then ${e}: ` +
      `${log[1].modules.length} more modules, ${log[1].bytes} B; have= ${log[1].url.length} chars of URL`);
    checks += 4;
  }

  // The server answers an entry the page holds without rebuilding anything: an empty bundle.
  {
    const log = [];
    const ctx = newContext(server, log);
    await vm.runInContext(`csgiRequire.async(${JSON.stringify('/' + SRC + 'index.js')})`, ctx);
    const url = vm.runInContext(`csgiRequire.url(${JSON.stringify('/' + SRC + 'map.js')})`, ctx);
    const res = await server.request(url);
    assert.strictEqual(res.status, 200);
    assert.deepStrictEqual(bundlePaths(res.body), []);
    checks++;
  }

  // A missing module reaches the callback with its name and the requirer chain.
  {
    const log = [];
    const ctx = newContext(server, log);
    const err = await vm.runInContext(`new Promise(function (done) {
      require('/node_modules/ramda/src/noSuchThing.js', function (err, x) { done(err); }); })`, ctx);
    assert.ok(err, 'an error');
    assert.strictEqual(err.status, 404);
    assert.strictEqual(err.module, 'node_modules/ramda/src/noSuchThing.js');
    assert.match(err.message, /cannot find module/);
    checks++;
  }

  server.close();
  console.log(`bundler_ramda: ${checks} checks passed over ${entries.join(', ')}`);
}

main().catch((e) => { console.error(e); process.exit(1); });
