'use strict';
// The npm corpus in headless Chromium (ctest bundler_corpus50):
//   node corpus_check.js --tool <csgi-bundle> --corpus <npm prefix> --cases <corpus_cases>
//                        --playwright <playwright-core> [--only a,b] [--verbose 1]
// Each file of corpus_cases/ is a small script over one npm package (or a family: d3's modules,
// react + react-dom) that prints deterministic lines with print(x); a script that finishes later sets
// globalThis.__wait to a promise. Each runs in the same Chromium twice: bundled by esbuild
// (--bundle --platform=browser --format=iife, the npm esbuild of the corpus) in a <script>, and through
// csgi-bundle-serve's loader (require.async of the same file). The printed lines — uncaught errors and
// rejections included — must be identical. A case listed in KNOWN (each with its cause, as in
// docs/bundler.md) may differ; any other difference fails, and so does a known one that stops differing
// (so the list stays true). At least 95% of the cases must be identical.
// BUNDLER_MODE=production: both in production mode (the server's Mode::production, which also leaves
// comments out; esbuild with process.env.NODE_ENV defined as "production").
const { startServer: spawnServer } = require('./serve.js');
const assert = require('assert');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawn } = require('child_process');

const MODE = process.env.BUNDLER_MODE === 'production' ? 'production' : 'development';
const args = {};
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];

// Cases whose outputs are known to differ, with the reason (kept in step with docs/bundler.md).
const KNOWN = {};

const chromium = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => fs.existsSync(p));
const serveTool = path.join(path.dirname(args.tool), 'csgi-bundle-serve');
if (!chromium || !fs.existsSync(serveTool) || !fs.existsSync(args.playwright || '')) {
  console.log('skipped: chromium, playwright-core or csgi-bundle-serve missing');
  process.exit(77);
}
const { chromium: pw } = require(path.resolve(args.playwright));
const corpus = fs.realpathSync(args.corpus);
const esbuild = require(path.join(corpus, 'node_modules/esbuild'));
let cases = fs.readdirSync(args.cases).filter((f) => f.endsWith('.js')).map((f) => f.slice(0, -3)).sort();
if (args.only) cases = cases.filter((c) => args.only.split(',').includes(c));

const PRELUDE = `<script>window.__out = []; window.print = (x) => __out.push(String(x));
  addEventListener('error', (e) => print('uncaught: ' + (e.error ? e.error.name + ': ' + e.error.message : e.message)));
  addEventListener('unhandledrejection', (e) => print('unhandled: ' + e.reason));</script>`;
const FINISH = `.then(() => window.__wait).then(() => print('END'), (e) => print('rejected: ' + (e && e.message)))`;

function startServer(root, docroot) {
  return spawnServer(serveTool, [root, docroot, '--listen', '127.0.0.1:0']);
}

// The case scripts live in the bundler's root (the corpus prefix), beside its node_modules.
function preparePages(docroot) {
  const dest = path.join(corpus, 'corpus_cases');
  fs.rmSync(dest, { recursive: true, force: true });
  fs.cpSync(args.cases, dest, { recursive: true });
  return Promise.all(cases.map(async (c) => {
    const result = await esbuild.build({ entryPoints: [path.join(dest, c + '.js')], bundle: true, platform: 'browser',
      format: 'iife', write: false, logLevel: 'silent',
      define: { 'process.env.NODE_ENV': JSON.stringify(MODE) } }).catch((e) => ({ error: e.message }));
    if (result.error) {
      fs.writeFileSync(path.join(docroot, c + '.esbuild.html'), `${PRELUDE}<script>print('esbuild: ' + ${JSON.stringify(result.error)})</script>`);
    } else {
      fs.writeFileSync(path.join(docroot, c + '.esbuild.js'), result.outputFiles[0].text);
      fs.writeFileSync(path.join(docroot, c + '.esbuild.html'), `<!doctype html><body>${PRELUDE}<script src="./${c}.esbuild.js"></script>
        <script>Promise.resolve()${FINISH}</script>`);
    }
    fs.writeFileSync(path.join(docroot, c + '.csgi.html'), `<!doctype html><body>${PRELUDE}<script src="/bundle/require.js"></script>
      <script>require.async('./corpus_cases/${c}.js')${FINISH}</script>`);
  }));
}

// Loads url in page and returns the lines it printed. A fresh document each time: nothing of an earlier
// case's page is left in its scripts.
async function run(page, url) {
  await page.goto(url);
  await page.waitForFunction(() => window.__out && window.__out.some((l) => l === 'END' || l.startsWith('rejected:') ||
    l.startsWith('esbuild:')), null, { timeout: 20000 }).catch(() => {});
  return await page.evaluate(() => (window.__out || ['no output: the page did not run its prelude']).join('\n'));
}

async function main() {
  const docroot = fs.mkdtempSync(path.join(os.tmpdir(), 'csgi-corpus-'));
  await preparePages(docroot);
  const server = await startServer(corpus, docroot);
  const browser = await pw.launch({ executablePath: chromium, args: ['--no-sandbox', '--headless=new'] });
  const same = [], misses = [], failures = [];
  // One page loads case after case (a new page costs Chromium a renderer); each load is a fresh document.
  const page = await browser.newPage();
  try {
    for (const c of cases) {
      const theirs = await run(page, `${server.url}/${c}.esbuild.html`);
      const ours = await run(page, `${server.url}/${c}.csgi.html`);
      const okRun = theirs.endsWith('END') && !/^(uncaught|unhandled|rejected|esbuild):/m.test(theirs);
      if (ours === theirs && okRun) {
        same.push(c);
        if (KNOWN[c]) failures.push(`${c}: listed as a known miss but now identical: update KNOWN and docs/bundler.md`);
        console.log(`ok: ${c}`);
      } else {
        misses.push(c);
        const why = !okRun ? 'the esbuild run did not finish cleanly' : 'outputs differ';
        console.log(`${KNOWN[c] ? 'known miss' : 'MISS'}: ${c}: ${why}${KNOWN[c] ? ' (' + KNOWN[c] + ')' : ''}`);
        if (!KNOWN[c]) failures.push(`${c}: ${why}\n--- esbuild:\n${theirs}\n--- csgi:\n${ours}`);
      }
      if (args.verbose) console.log(`--- ${c}\n${ours}`);
    }
  } finally {
    await browser.close();
    server.proc.kill('SIGTERM');
    fs.rmSync(docroot, { recursive: true, force: true });
  }
  const share = same.length / cases.length;
  console.log(`bundler_corpus50: ${same.length} of ${cases.length} cases identical (${(100 * share).toFixed(1)}%)` +
    (misses.length ? `; misses: ${misses.join(', ')}` : ''));
  assert.deepStrictEqual(failures, [], failures.join('\n\n'));
  if (!args.only) {
    assert.ok(cases.length >= 50, `the corpus has ${cases.length} cases, fewer than 50`);
    assert.ok(share >= 0.95, 'fewer than 95% of the corpus identical');
  }
}

main().catch((e) => { console.error(e.message || e); process.exit(1); });
