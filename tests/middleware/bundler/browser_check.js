'use strict';
// The demo page in headless Chromium (ctest bundler_browser), served by the real standalone adapter
// (csgi-bundle-serve: the bundler at /bundle plus static files):
//   node browser_check.js --tool <csgi-bundle> --corpus <dir with node_modules/ramda> --playwright <dir>
//                         --demo <examples/bundler> --build <build dir>
// Checks the page's output, that the first require costs one bundle request, that the second require
// fetches only modules the page lacks (requests and bytes counted), that a held module costs no request,
// and that a missing module's error reaches the callback with its requirer chain.
const { startServer: spawnServer } = require('./serve.js');
const assert = require('assert');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawn } = require('child_process');

const args = {};
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];

const chromium = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => fs.existsSync(p));
if (!chromium) { console.log('skipped: chromium not installed (scripts/install-deps.sh test)'); process.exit(77); }
const serveTool = path.join(path.dirname(args.tool), 'csgi-bundle-serve');
if (!fs.existsSync(serveTool)) { console.log('skipped: csgi-bundle-serve not built'); process.exit(77); }
const { chromium: pw } = require(path.resolve(args.playwright));

// A root holding the demo and ramda (copied: a symlink out of the root would be refused, by design).
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'csgi-bundler-browser-'));
fs.cpSync(args.demo, root, { recursive: true });
fs.cpSync(path.join(args.corpus, 'node_modules', 'ramda'), path.join(root, 'node_modules', 'ramda'), { recursive: true });

function startServer() {
  return spawnServer(serveTool, [root, '--listen', '127.0.0.1:0']);
}

async function main() {
  const server = await startServer();
  const browser = await pw.launch({ executablePath: chromium, args: ['--no-sandbox', '--headless=new'] });
  try {
    const page = await browser.newPage();
    const bundleRequests = [];
    page.on('response', async (res) => {
      const u = new URL(res.url());
      if (!u.pathname.startsWith('/bundle/') || u.pathname === '/bundle/require.js') return;
      const body = await res.body().catch(() => Buffer.alloc(0));
      bundleRequests.push({ url: u.pathname + u.search, status: res.status(), bytes: body.length,
        modules: Number(res.headers()['x-bundle-modules']),
        paths: body.toString().split('\n').map((l) => (/^\[\d+,"([^"]*)"/.exec(l) || [])[1]).filter(Boolean) });
    });
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));

    await page.goto(server.url + '/index.html');
    await page.waitForFunction(() => document.getElementById('out').textContent !== 'loading…', null, { timeout: 20000 });
    const out = await page.textContent('#out');
    assert.strictEqual(out, '1. doubled: 6,2,8,2,10,18,4,12\n2. greeting: HELLO FROM THE BUNDLER!');
    await page.waitForTimeout(100);
    assert.strictEqual(bundleRequests.length, 1, 'one bundle request for the page');
    const first = bundleRequests[0];
    assert.ok(first.paths.includes('app/main.js') && first.paths.includes('node_modules/ramda/src/map.js'));

    await page.click('#more');
    await page.waitForFunction(() => document.getElementById('stats').textContent !== '' ||
      document.getElementById('error').textContent !== '', null, { timeout: 20000 });
    assert.strictEqual(await page.textContent('#error'), '');
    assert.strictEqual(await page.textContent('#stats'), '1. sum: 31\n2. mean: 3.875\n3. median: 3.5');
    await page.waitForTimeout(100);
    assert.strictEqual(bundleRequests.length, 2, 'one more request for the second require');
    const second = bundleRequests[1];
    assert.match(second.url, /^\/bundle\/app\/stats\?e=[0-9a-f]+&have=[A-Za-z0-9_-]+$/);
    const overlap = second.paths.filter((p) => first.paths.includes(p));
    assert.deepStrictEqual(overlap, [], 'the second bundle repeats nothing the page holds');
    assert.ok(second.paths.includes('app/stats.js') && second.paths.includes('node_modules/ramda/src/index.js'));
    assert.ok(!second.paths.includes('app/format.js'));

    // Held modules cost nothing; a missing one fails with its chain.
    const again = await page.evaluate(() => new Promise((done) => require('./app/stats', (e, s) => done(!e && typeof s.summary))));
    assert.strictEqual(again, 'function');
    const err = await page.evaluate(() => new Promise((done) =>
      require('./app/nope', (e) => done(e ? { message: e.message, status: e.status, module: e.module } : null))));
    assert.ok(err && err.status === 404 && err.module === 'app/nope', JSON.stringify(err));
    for (let i = 0; i < 50 && bundleRequests.length < 3; i++) await page.waitForTimeout(50);
    assert.strictEqual(bundleRequests.length, 3, 'no request for the held module, one for the missing one');
    // Devtools names: each module is its own script with a sourceURL.
    const names = await page.evaluate(() => {
      try { require('./app/format').lines(null); } catch (e) { return String(e.stack); }
      return '';
    });
    assert.match(names, /\/bundle\/app\/format\.js/);
    assert.deepStrictEqual(errors, []);
    console.log(`bundler_browser: first require: ${first.modules} modules, ${first.bytes} B in 1 request; ` +
      `second: ${second.modules} modules, ${second.bytes} B in 1 request (have= ${second.url.length - second.url.indexOf('have=') - 5} chars); ` +
      `held module: 0 requests`);
  } finally {
    await browser.close();
    server.proc.kill('SIGTERM');
    fs.rmSync(root, { recursive: true, force: true });
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
