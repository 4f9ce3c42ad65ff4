'use strict';
// Live reload end to end (ctest bundler_live): csgi-bundle-serve with BUNDLER_LIVE_RELOAD=1 and
// --workers 2 (prefork: each worker has its own inotify watcher), then
//   node live_check.js --tool <csgi-bundle> [--playwright <playwright-core>]
// * socket level: several <mount>/~live streams (spread over the workers) each get `event: change`
//   after an edit, although the workers holding them built nothing;
// * Chromium: a page whose loader follows the stream reloads after an edit and runs the new code.
const { startServer: spawnServer } = require('./serve.js');
const assert = require('assert');
const fs = require('fs');
const http = require('http');
const os = require('os');
const path = require('path');
const { spawn } = require('child_process');

const args = {};
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
const serveTool = path.join(path.dirname(args.tool), 'csgi-bundle-serve');
if (!fs.existsSync(serveTool)) { console.log('skipped: csgi-bundle-serve not built'); process.exit(77); }

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'csgi-live-'));
fs.mkdirSync(path.join(root, 'app'));
fs.writeFileSync(path.join(root, 'app/main.js'), "module.exports = 'v1';\n");
fs.writeFileSync(path.join(root, 'index.html'), `<!doctype html><script src="/bundle/require.js"></script>
<script>sessionStorage.loads = Number(sessionStorage.loads || 0) + 1;
require('./app/main', function (err, v) { document.title = err ? 'error: ' + err.message : v + ' #' + sessionStorage.loads; });</script>`);

function startServer() {
  return spawnServer(serveTool, [root, '--listen', '127.0.0.1:0', '--workers', '2', '--reuseport'],
                     { env: { ...process.env, BUNDLER_LIVE_RELOAD: '1' }, detached: true });
}

// Opens one event stream; resolves with an object whose `text` grows as events arrive.
function stream(url) {
  return new Promise((resolve, reject) => {
    const req = http.get(url + '/bundle/~live', (res) => {
      assert.strictEqual(res.statusCode, 200);
      assert.strictEqual(res.headers['content-type'], 'text/event-stream');
      const s = { text: '', req };
      res.setEncoding('utf8');
      res.on('data', (d) => {
        s.text += d;
        if (s.text.includes('retry:')) resolve(s);
      });
    });
    req.on('error', reject);
    setTimeout(() => reject(new Error('no stream opening')), 10000);
  });
}

async function until(fn, what, ms = 10000) {
  for (let t = 0; t < ms; t += 50) {
    if (await fn()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('timed out waiting for ' + what);
}

async function socketLevel(url) {
  // Streams until two workers hold some (--reuseport spreads connections by address; bounded).
  const streams = [], pids = new Set();
  for (let i = 0; i < 40 && (streams.length < 6 || pids.size < 2); i++) {
    const s = await stream(url);
    streams.push(s);
    pids.add((/process (\d+)/.exec(s.text) || [])[1]);
  }
  assert.strictEqual(pids.size, 2, `streams held by ${pids.size} worker(s) after ${streams.length} connections`);
  await new Promise((r) => setTimeout(r, 200));
  fs.writeFileSync(path.join(root, 'app/other.js'), 'module.exports = 0;\n');
  await until(() => streams.every((s) => /event: change\ndata: \d+\n\n/.test(s.text)), 'an event on every stream');
  for (const s of streams) s.req.destroy();
  console.log(`ok: ${streams.length} streams held by 2 workers (${[...pids].join(', ')}) each got the change`);
}

async function browserLevel(url) {
  const chromium = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => fs.existsSync(p));
  if (!chromium || !args.playwright || !fs.existsSync(args.playwright)) {
    console.log('skipped: the Chromium part (chromium or playwright-core missing)');
    return false;
  }
  const { chromium: pw } = require(path.resolve(args.playwright));
  const browser = await pw.launch({ executablePath: chromium, args: ['--no-sandbox', '--headless=new'] });
  try {
    const page = await browser.newPage();
    await page.goto(url + '/index.html');
    await until(async () => (await page.title()) === 'v1 #1', 'the first load');
    await until(() => page.evaluate(() => !!csgiRequire.events && csgiRequire.events.readyState === 1), 'the stream');
    fs.writeFileSync(path.join(root, 'app/main.js'), "module.exports = 'v2';\n");
    await until(async () => (await page.title().catch(() => '')) === 'v2 #2', 'the reload with the new code');
    console.log('ok: the page reloaded after the edit and ran the new code');
  } finally {
    await browser.close();
  }
  return true;
}

async function main() {
  const server = await startServer();
  try {
    await socketLevel(server.url);
    await browserLevel(server.url);
  } finally {
    try { process.kill(-server.proc.pid, 'SIGKILL'); } catch (e) { /* gone */ }
    fs.rmSync(root, { recursive: true, force: true });
  }
  console.log('bundler_live: passed');
}

main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
