'use strict';
// Browser resolution against esbuild (run by ctest as bundler_esbuild): for npm packages that use the
// `browser` field (string and object, `false` entries) and `exports` with browser/require conditions,
//   node esbuild_check.js <csgi-bundle> <corpus prefix> <require.js>
// the bundle of `require('<pkg>')` holds exactly the files `esbuild --bundle --platform=browser` reads
// for the same line (its metafile inputs; its "(disabled):x" is our "(empty):x"; trees with ES imports
// too), and a small script
// prints the same through esbuild's bundle and through the csgi loader, each in a fresh vm context.
const assert = require('assert');
const fs = require('fs');
const os = require('os');
const path = require('path');
const vm = require('vm');
const { BundleServer, bundlePaths } = require('./bundle_server.js');

const [tool, corpus, loaderPath] = process.argv.slice(2);
const root = fs.realpathSync(corpus);
const loader = fs.readFileSync(loaderPath, 'utf8');
const esbuild = require(path.join(root, 'node_modules/esbuild'));

// package -> a script over its export `P` whose printed lines must match.
const cases = {
  axios: `print(typeof P.get); print(typeof P.create); print(P.isAxiosError({ isAxiosError: true }));
    print(Object.keys(P.defaults.headers.common));`,
  uuid: `print(P.validate('6ec0bd7f-11c0-43da-975e-2a8ad9ebae0b')); print(P.version('6ec0bd7f-11c0-43da-975e-2a8ad9ebae0b'));
    print(P.v5('hello', P.v5.URL)); print(P.v3('hello', P.v3.DNS));`,
  debug: `print(typeof P); print(typeof P('x').extend); print(P.enabled('nope'));`,
  'object-inspect': `print(P({ a: [1, 'x', null], b: new Map([[1, 2]]) })); print(P(new Set([3])));`,
};

// Handmade trees for the finer rules (each file's text is its module source), compared the same way.
const trees = {
  'browser map': {
    'main.js': "require('pkg'); require('pkg/lib/node'); require('exp'); require('dual'); require('self'); require('only'); require('q');",
    'node_modules/pkg/package.json': JSON.stringify({ main: './index.js', browser: { './index.js': './browser-index.js',
      './lib/node': './lib/browser.js', './lib/server.js': false, fs: false, events: 'events-lite',
      './missing.js': './lib/browser.js', 'lib/plain.js': './lib/browser.js', './lib/c': false } }),
    'node_modules/pkg/index.js': "module.exports = 'node';",
    'node_modules/pkg/browser-index.js': "require('./lib/node.js'); require('./lib/node'); require('./lib/server');" +
      "require('fs'); require('events'); require('./missing.js'); require('./lib/plain'); require('./lib/c.js'); require('./lib/c/');",
    'node_modules/pkg/lib/node.js': '', 'node_modules/pkg/lib/browser.js': '', 'node_modules/pkg/lib/server.js': '',
    'node_modules/pkg/lib/plain.js': '', 'node_modules/pkg/lib/c.js': '', 'node_modules/pkg/lib/c/index.js': '',
    'node_modules/events-lite/index.js': '',
    'node_modules/exp/package.json': JSON.stringify({ exports: { '.': { node: './n.js', default: './d.js' } }, browser: { './d.js': './bd.js' } }),
    'node_modules/exp/n.js': '', 'node_modules/exp/d.js': '', 'node_modules/exp/bd.js': '',
    'node_modules/dual/package.json': JSON.stringify({ main: './cjs.js', module: './esm.js' }),
    'node_modules/dual/cjs.js': '', 'node_modules/dual/esm.js': 'export default 1',
    'node_modules/only/package.json': JSON.stringify({ module: './esm.js' }),
    'node_modules/only/esm.js': 'export default 1', 'node_modules/only/index.js': '',
    'node_modules/self/package.json': JSON.stringify({ main: './i.js', imports: { '#dep': { browser: './dep-b.js', default: './dep.js' } } }),
    'node_modules/self/i.js': "require('#dep')", 'node_modules/self/dep-b.js': '', 'node_modules/self/dep.js': '',
    'node_modules/q/package.json': JSON.stringify({ main: './index.js', browser: { './index.js': './b.js' }, exports: { '.': './index.js' } }),
    'node_modules/q/index.js': '', 'node_modules/q/b.js': '',
  },
  // ES imports take the `import` condition and the `module` main field; a require beside them does not.
  'es imports': {
    'main.js': "import d from 'dual'; import c from 'cond'; import * as o from 'only'; import './lib/req.js'; export { d, c, o };",
    'lib/req.js': "require('cond');",
    'node_modules/dual/package.json': JSON.stringify({ main: './cjs.js', module: './esm.js' }),
    'node_modules/dual/cjs.js': '', 'node_modules/dual/esm.js': "export default 'esm';",
    'node_modules/cond/package.json': JSON.stringify({ exports: { '.': { import: './i.mjs', require: './r.cjs' } } }),
    'node_modules/cond/i.mjs': "export default 'import'; export * from './more.js';", 'node_modules/cond/more.js': 'export const m = 1;',
    'node_modules/cond/r.cjs': '',
    'node_modules/only/package.json': JSON.stringify({ browser: './b.js', module: './m.js' }),
    'node_modules/only/b.js': 'export const b = 1;', 'node_modules/only/m.js': '',
  },
};

async function checkTree(name, files) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'csgi-esbuild-'));
  try {
    for (const [f, text] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
      fs.writeFileSync(path.join(dir, f), text);
    }
    const result = await esbuild.build({ entryPoints: ['main.js'], absWorkingDir: dir, bundle: true, platform: 'browser',
      write: false, metafile: true, logLevel: 'silent', outfile: 'out.js' });
    const theirs = new Set(Object.keys(result.metafile.inputs).map(norm));
    const server = new BundleServer(tool, dir);
    const res = await server.request('/main.js');
    server.close();
    assert.strictEqual(res.status, 200, res.body.slice(0, 400));
    const ours = new Set(bundlePaths(res.body).map(norm));
    const extra = [...ours].filter((x) => !theirs.has(x)), missing = [...theirs].filter((x) => !ours.has(x));
    assert.deepStrictEqual({ extra, missing }, { extra: [], missing: [] }, `module set of tree "${name}" vs esbuild`);
    console.log(`ok: tree "${name}": ${ours.size} modules as esbuild`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

// A context like a page's: no process, no require; the few globals the packages feel for.
function pageContext() {
  const ctx = vm.createContext({ console, TextEncoder, TextDecoder, URL, URLSearchParams, setTimeout, clearTimeout });
  ctx.window = ctx; ctx.self = ctx;
  return ctx;
}

function norm(p) { return p.replace(/^\((?:empty|disabled)\):/, '(empty):').replace(/\.js$/, ''); }

async function main() {
  let checks = 0;
  for (const [name, files] of Object.entries(trees)) { await checkTree(name, files); checks++; }
  const server = new BundleServer(tool, root);
  for (const [pkg, script] of Object.entries(cases)) {
    const result = await esbuild.build({
      stdin: { contents: `globalThis.__P = require(${JSON.stringify(pkg)});`, resolveDir: root, sourcefile: 'entry.js' },
      absWorkingDir: root, bundle: true, platform: 'browser', write: false, metafile: true, logLevel: 'silent',
      define: { 'process.env.NODE_ENV': '"development"' },
    });
    const theirs = new Set(Object.keys(result.metafile.inputs).filter((f) => f !== 'entry.js').map(norm));
    const res = await server.request('/~/' + pkg);
    assert.strictEqual(res.status, 200, res.body.slice(0, 400));
    const ours = new Set(bundlePaths(res.body).map(norm));
    const extra = [...ours].filter((x) => !theirs.has(x)), missing = [...theirs].filter((x) => !ours.has(x));
    assert.deepStrictEqual({ extra, missing }, { extra: [], missing: [] }, `module set of ${pkg} vs esbuild`);

    const run = (setup) => {
      const ctx = pageContext();
      ctx.__out = [];
      setup(ctx);
      vm.runInContext(`(function (P, print) { ${script} })(__P, function (v) { __out.push(typeof v === 'string' ? v : JSON.stringify(v)); });`, ctx);
      return Array.from(ctx.__out).join('\n');
    };
    const viaEsbuild = run((ctx) => vm.runInContext(result.outputFiles[0].text, ctx));
    const viaCsgi = run((ctx) => {
      vm.runInContext(loader, ctx);
      vm.runInContext(res.body, ctx);
      vm.runInContext(`__P = require(${JSON.stringify('/' + bundlePaths(res.body)[0])});`, ctx);  // the entry
    });
    assert.strictEqual(viaCsgi, viaEsbuild, `output of ${pkg}`);
    console.log(`ok: ${pkg}: ${ours.size} modules as esbuild; output ${JSON.stringify(viaCsgi.slice(0, 60))}…`);
    checks += 2;
  }
  server.close();
  console.log(`bundler_esbuild: ${checks} checks passed`);
}

main().catch((e) => { console.error(e); process.exit(1); });
