'use strict';
// ES modules through the csgi loader against the reference implementations (ctest bundler_esm):
//   node esm_check.js --tool <csgi-bundle> --cases <esm_cases> --corpus <dir with node_modules/esbuild>
//                     --loader <require.js> [--playwright <playwright-core>]
// * Chromium (headless, Debian's): every case directory but interop/ is opened twice in the same
//   browser, natively as <script type=module src=main.js> and through csgi-bundle-serve's
//   /bundle/require.js (require.async of the same main.js); the printed lines must be identical. uuid/
//   and ramda/ run uuid's dist/esm-browser and ramda's es/ (~300 modules) from the corpus.
//   BUNDLER_MODE=production runs csgi-bundle-serve in production mode: tree shaking leaves statements out,
//   and the dynamic imports (dynamic/, shaken/) get later bundles that add them to the modules held.
// * esbuild (Node vm): the interop/ case (ES modules importing CommonJS and back) bundled by esbuild
//   --bundle --format=iife and through the loader print the same lines.
const { startServer: spawnServer } = require('./serve.js');
const assert = require('assert');
const fs = require('fs');
const os = require('os');
const path = require('path');
const vm = require('vm');
const { spawn } = require('child_process');
const { BundleServer } = require('./bundle_server.js');

const args = {};
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
const loader = fs.readFileSync(args.loader, 'utf8');
const cases = fs.readdirSync(args.cases).filter((c) => fs.statSync(path.join(args.cases, c)).isDirectory()).sort();

// What a page prints: print(x) appends a line; errors that escape become lines too.
const PRELUDE = `window.__out = []; window.print = (x) => __out.push(String(x));
  addEventListener('error', (e) => print('uncaught: ' + (e.error ? e.error.name + ': ' + e.error.message : e.message)));
  addEventListener('unhandledrejection', (e) => print('unhandled: ' + e.reason));`;
const selfEnding = (c) => /print\('END'\)/.test(fs.readFileSync(path.join(args.cases, c, 'main.js'), 'utf8'));

function startServer(root) {
  const serveTool = path.join(path.dirname(args.tool), 'csgi-bundle-serve');
  return spawnServer(serveTool, [root, '--listen', '127.0.0.1:0']);
}

async function chromiumCases() {
  const chromium = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => fs.existsSync(p));
  const serveTool = path.join(path.dirname(args.tool), 'csgi-bundle-serve');
  if (!chromium || !args.playwright || !fs.existsSync(args.playwright) || !fs.existsSync(serveTool)) {
    console.log('skipped: the Chromium differential (chromium, playwright-core or csgi-bundle-serve missing)');
    return false;
  }
  const { chromium: pw } = require(path.resolve(args.playwright));
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'csgi-esm-'));
  fs.cpSync(args.cases, root, { recursive: true });
  fs.cpSync(path.join(args.corpus, 'node_modules/uuid/dist/esm-browser'), path.join(root, 'uuid/esm-browser'),
    { recursive: true });
  fs.cpSync(path.join(args.corpus, 'node_modules/ramda/es'), path.join(root, 'ramda/es'), { recursive: true });
  for (const c of cases) {
    const end = selfEnding(c) ? '' : `<script type="module">print('END')</script>`;
    fs.writeFileSync(path.join(root, c, 'native.html'),
      `<!doctype html><script>${PRELUDE}</script><script type="module" src="./main.js"></script>${end}`);
    fs.writeFileSync(path.join(root, c, 'csgi.html'),
      `<!doctype html><script>${PRELUDE}</script><script src="/bundle/require.js"></script><script>
      require.async('./${c}/main.js').then(() => { ${end ? "print('END');" : ''} }, (e) => print('rejected: ' + e.message));
      </script>`);
  }
  const server = await startServer(root);
  const browser = await pw.launch({ executablePath: chromium, args: ['--no-sandbox', '--headless=new'] });
  // One page loads every document in turn (a new page costs Chromium a renderer); each is a fresh
  // document with its own module map.
  const p = await browser.newPage();
  try {
    for (const c of cases) {
      if (c === 'interop') continue;  // CommonJS: no native reference in a browser (esbuild's, below)
      const run = async (page) => {
        await p.goto(`${server.url}/${c}/${page}`);
        await p.waitForFunction(() => window.__out && window.__out.includes('END'), null, { timeout: 10000 })
          .catch(() => {});
        return await p.evaluate(() => window.__out.join('\n'));
      };
      const native = await run('native.html');
      const ours = await run('csgi.html');
      assert.ok(native.endsWith('END'), `case ${c}: the native run did not finish:\n${native}`);
      assert.strictEqual(ours, native, `case ${c}: csgi loader vs native <script type=module>`);
      console.log(`ok: ${c}: ${native.split("\n").length} lines as native modules`);
      if (process.env.VERBOSE) console.log(native);
    }
  } finally {
    await browser.close();
    server.proc.kill('SIGTERM');
    fs.rmSync(root, { recursive: true, force: true });
  }
  return true;
}

async function interopCase() {
  const esbuild = require(path.join(path.resolve(args.corpus), 'node_modules/esbuild'));
  const dir = path.join(args.cases, 'interop');
  const built = await esbuild.build({ entryPoints: [path.join(dir, 'main.js')], bundle: true, format: 'iife',
    platform: 'browser', write: false, logLevel: 'silent' });
  const print = (ctx) => { ctx.__out = []; ctx.print = (x) => ctx.__out.push(String(x)); return ctx; };
  const theirs = print(vm.createContext({}));
  vm.runInContext(built.outputFiles[0].text, theirs);
  const server = new BundleServer(args.tool, dir);
  const res = await server.request('/main.js');
  server.close();
  assert.strictEqual(res.status, 200, res.body);
  const ours = print(vm.createContext({}));
  vm.runInContext(loader, ours);
  vm.runInContext(res.body, ours);
  vm.runInContext(`require('./main.js')`, ours);
  assert.strictEqual(ours.__out.join('\n'), theirs.__out.join('\n'), 'interop: csgi loader vs esbuild');
  console.log(`ok: interop: ${ours.__out.length} lines as esbuild`);
}

async function main() {
  await interopCase();
  if (!(await chromiumCases())) process.exit(77);
  console.log(`bundler_esm: ${cases.length - 1} cases as Chromium's native modules, interop as esbuild`);
}

main().catch((e) => { console.error(e); process.exit(1); });
