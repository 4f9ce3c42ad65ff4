'use strict';
// A React + TypeScript app (tsx_app/: function components, hooks, a tsconfig path alias, an imported
// stylesheet, a .tsx entry, a route loaded by import()) in headless Chromium, through csgi-bundle-serve
// with the corpus's esbuild as its transformer, against esbuild's own bundle of the same entry
// (ctest bundler_tsx):
//   node tsx_check.js --tool <csgi-bundle> --app <tsx_app> --corpus <dir with node_modules>
//                     --playwright <playwright-core>
// Checks: the same DOM after the first render and after the route opens; the stylesheet applied once;
// the route's bundle carries only the route's modules (none the page already holds); a CSS module's
// scoped class and its url() image (served under /bundle/~asset/) in the page.
const { startServer } = require('./serve.js');
const { bundlePaths } = require('./bundle_server.js');
const assert = require('assert');
const fs = require('fs');
const os = require('os');
const path = require('path');

const args = {};
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
const corpus = path.resolve(args.corpus);
const esbuildBin = path.join(corpus, 'node_modules/.bin/esbuild');

async function main() {
  const chromium = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => fs.existsSync(p));
  const serveTool = path.join(path.dirname(args.tool), 'csgi-bundle-serve');
  if (!chromium || !args.playwright || !fs.existsSync(args.playwright) || !fs.existsSync(serveTool)) {
    console.log('skipped: chromium, playwright-core or csgi-bundle-serve missing');
    process.exit(77);
  }
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'csgi-tsx-'));
  fs.cpSync(args.app, root, { recursive: true });
  for (const p of ['react', 'react-dom', 'scheduler', 'loose-envify', 'js-tokens'])
    fs.cpSync(path.join(corpus, 'node_modules', p), path.join(root, 'node_modules', p), { recursive: true });
  const esbuild = require(path.join(corpus, 'node_modules/esbuild'));
  await esbuild.build({ entryPoints: [path.join(root, 'src/main.tsx')], bundle: true, format: 'iife',
    platform: 'browser', outfile: path.join(root, 'esbuild.js'), define: { 'process.env.NODE_ENV': '"development"' },
    tsconfig: path.join(root, 'tsconfig.json'), logLevel: 'silent' });
  const body = '<!doctype html><html><head></head><body><div id="root"></div>';
  fs.writeFileSync(path.join(root, 'esbuild.html'), `${body}<link rel="stylesheet" href="/esbuild.css"><script src="/esbuild.js"></script></body></html>`);
  fs.writeFileSync(path.join(root, 'csgi.html'), `${body}<script src="/bundle/require.js"></script>
    <script>require.async('./src/main.tsx').catch((e) => { window.__failed = e.message; });</script></body></html>`);

  const server = await startServer(serveTool, [root, '--listen', '127.0.0.1:0'],
    { env: { ...process.env, BUNDLER_ESBUILD: esbuildBin } });
  const { chromium: pw } = require(path.resolve(args.playwright));
  const browser = await pw.launch({ executablePath: chromium, args: ['--no-sandbox', '--headless=new'] });
  try {
    const run = async (page) => {
      const p = await browser.newPage();
      const errors = [];
      p.on('pageerror', (e) => errors.push(e.message));
      const bundles = [];
      p.on('response', (r) => { if (new URL(r.url()).pathname.startsWith('/bundle/') && !r.url().endsWith('require.js')) bundles.push(r); });
      await p.goto(`${server.url}/${page}`);
      await p.waitForSelector('main[data-ready="true"]', { timeout: 15000 }).catch(() => {});
      const first = await p.evaluate(() => document.getElementById('root').innerHTML);
      const color = await p.evaluate(() => {
        const c = document.querySelector('.counter');
        return c ? getComputedStyle(c).color : null;
      });
      const styles = await p.evaluate(() => document.querySelectorAll('style').length);
      const before = bundles.length;
      await p.click('#open', { timeout: 5000 }).catch(() => {});
      await p.waitForFunction(() => window.__routeDone && document.querySelector('.settings'), null, { timeout: 15000 })
        .catch(() => {});
      const second = await p.evaluate(() => document.getElementById('root').innerHTML);
      const later = [];
      for (const r of bundles.slice(before)) later.push(bundlePaths(await r.text()));
      await p.close();
      return { first, second, color, styles, errors, later };
    };
    const theirs = await run('esbuild.html');
    const ours = await run('csgi.html');
    assert.deepStrictEqual(theirs.errors, [], 'esbuild page errors');
    assert.deepStrictEqual(ours.errors, [], 'csgi page errors');
    assert.ok(theirs.first.includes('count: 20'), 'esbuild page did not render: ' + theirs.first);
    assert.strictEqual(ours.first, theirs.first, 'first render: csgi vs esbuild');
    assert.ok(theirs.second.includes('THEME (5)'), 'esbuild route did not open: ' + theirs.second);
    assert.strictEqual(ours.second, theirs.second, 'after import() of the route: csgi vs esbuild');
    assert.strictEqual(ours.color, theirs.color, 'the stylesheet: csgi vs esbuild');
    assert.strictEqual(ours.color, 'rgb(0, 128, 0)');
    assert.strictEqual(ours.styles, 1, 'the stylesheet applied once');
    assert.strictEqual(ours.later.length, 1, 'one bundle for the route');
    assert.deepStrictEqual(ours.later[0].sort(), ['src/routes/Settings.tsx', 'src/util/format.ts'],
      'the route bundle holds only what the page lacked');
    console.log(`ok: same DOM as esbuild (${ours.first.length} + ${ours.second.length} chars); route bundle: ${ours.later[0].join(', ')}`);
    await cssModule(browser, server, root);
    await liveReload(browser, root);
  } finally {
    await browser.close();
    server.proc.kill('SIGTERM');
    fs.rmSync(root, { recursive: true, force: true });
  }
}

// A CSS module with a url() reference, imported by a module the page loads later: the scoped class
// takes the stylesheet's rules and the image the browser fetches is the one next to the stylesheet.
async function cssModule(browser, server, root) {
  fs.mkdirSync(path.join(root, 'src/badge/img'), { recursive: true });
  fs.writeFileSync(path.join(root, 'src/badge/img/dot.svg'),
    '<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><rect width="4" height="4" fill="red"/></svg>');
  fs.writeFileSync(path.join(root, 'src/badge/badge.module.css'),
    '.badge { color: rgb(1, 2, 3); background-image: url(img/dot.svg) }\n:global(.plain) .badge { color: rgb(4, 5, 6) }\n');
  fs.writeFileSync(path.join(root, 'src/badge/badge.ts'), "import styles, { badge } from './badge.module.css';\n" +
    "const el: HTMLElement = document.createElement('b');\nel.className = badge;\nel.id = 'badge';\n" +
    'document.body.appendChild(el);\nexport default styles;\n');
  const p = await browser.newPage();
  const assets = [];
  p.on('response', (r) => { if (r.url().includes('/~asset/')) assets.push([new URL(r.url()).pathname, r.status()]); });
  await p.goto(`${server.url}/csgi.html`);
  const got = await p.evaluate(async () => {
    const ns = await require.async('./src/badge/badge.ts');
    const el = document.getElementById('badge'), style = getComputedStyle(el);
    const image = style.backgroundImage;  // the browser loads it once the element is styled
    await new Promise((r) => { const i = new Image(); i.onload = i.onerror = r; i.src = image.slice(5, -2); });
    return { map: ns.default, className: el.className, color: style.color, image };
  });
  await p.close();
  assert.strictEqual(got.className, got.map.badge, 'the named export is the default map\'s name');
  assert.match(got.className, /^badge_badge_[0-9a-f]{6}$/);
  assert.strictEqual(got.color, 'rgb(1, 2, 3)', 'the scoped class takes its rules (the :global one does not apply)');
  assert.match(got.image, /\/bundle\/~asset\/src\/badge\/img\/dot\.svg"\)$/);
  assert.deepStrictEqual(assets.find(([u]) => u === '/bundle/~asset/src/badge/img/dot.svg'),
    ['/bundle/~asset/src/badge/img/dot.svg', 200], 'the image served: ' + JSON.stringify(assets));
  console.log(`ok: CSS module ${got.className}, url() -> ${got.image}`);
}

// Live reload: an edit of a .tsx module reloads the open page; an edit of a stylesheet replaces its
// <style> text in the same document.
async function liveReload(browser, root) {
  const serveTool = path.join(path.dirname(args.tool), 'csgi-bundle-serve');
  const server = await startServer(serveTool, [root, '--listen', '127.0.0.1:0'],
    { env: { ...process.env, BUNDLER_ESBUILD: esbuildBin, BUNDLER_LIVE_RELOAD: '1' } });
  const until = async (fn, what) => {
    for (let i = 0; i < 300; i++) {
      if (await fn().catch(() => false)) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('timed out waiting for ' + what);
  };
  try {
    const p = await browser.newPage();
    await p.goto(`${server.url}/csgi.html`);
    await until(() => p.evaluate(() => !!document.querySelector('main[data-ready="true"]')), 'the first render');
    await until(() => p.evaluate(() => !!csgiRequire.events && csgiRequire.events.readyState === 1), 'the stream');
    const counter = path.join(root, 'src/components/Counter.tsx');
    fs.writeFileSync(counter, fs.readFileSync(counter, 'utf8').replace('count: ', 'clicks: '));
    await until(() => p.evaluate(() => document.getElementById('root').innerHTML.includes('clicks: 20')), 'the .tsx edit');
    await until(() => p.evaluate(() => !!csgiRequire.events && csgiRequire.events.readyState === 1), 'the stream again');
    await p.evaluate(() => { window.__sameDocument = true; });
    const css = path.join(root, 'src/app.css');
    fs.writeFileSync(css, fs.readFileSync(css, 'utf8').replace('rgb(0, 128, 0)', 'rgb(0, 0, 255)'));
    await until(() => p.evaluate(() => {
      const c = document.querySelector('.counter');
      return !!c && getComputedStyle(c).color === 'rgb(0, 0, 255)';
    }), 'the .css edit');
    assert.strictEqual(await p.evaluate(() => window.__sameDocument === true), true, 'the .css edit reloaded the page');
    assert.strictEqual(await p.evaluate(() => document.querySelectorAll('style[data-csgi-css]').length), 1);
    console.log('ok: live reload after a .tsx edit; a .css edit swapped in without a reload');
    // A CSS module's edit with the same names swaps its <style> in place; a new name reloads the page.
    await p.evaluate(() => require.async('./src/badge/badge.ts'));
    const mod = path.join(root, 'src/badge/badge.module.css');
    fs.writeFileSync(mod, fs.readFileSync(mod, 'utf8').replace('rgb(1, 2, 3)', 'rgb(7, 8, 9)'));
    await until(() => p.evaluate(() => getComputedStyle(document.getElementById('badge')).color === 'rgb(7, 8, 9)'),
      'the .module.css edit');
    assert.strictEqual(await p.evaluate(() => window.__sameDocument === true), true, 'the .module.css edit reloaded the page');
    fs.appendFileSync(mod, '.added { top: 0 }\n');
    await until(() => p.evaluate(() => window.__sameDocument !== true), 'the reload for a new name');
    console.log('ok: a .module.css edit swapped in without a reload; a new class name reloaded the page');
    await p.close();
  } finally {
    server.proc.kill('SIGTERM');
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
