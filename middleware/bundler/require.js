/* csgi bundler client loader (docs/bundler.md): require(name, cb) / require.async(name) load name
 * and what it needs; require(name) runs one delivered, as require('literal') in a module does. */
(function (global) {
  'use strict';
  if (global.csgiRequire && global.csgiRequire.define) return;
  const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  let base = (global.document?.currentScript?.src || '').replace(/\/require\.js(?:[?#].*)?$/, '');
  let epoch = '', byId = [], processShim = null;  // byId: module id (this epoch) -> record
  const byPath = Object.create(null), aliases = Object.create(null), pending = Object.create(null);
  const indirectEval = eval, error = (message, props) => Object.assign(new Error(message), props);
  const urlOf = (path) => base + '/' + path.split('/').map(encodeURIComponent).join('/');
  const dirname = (path) => path.slice(0, Math.max(path.lastIndexOf('/'), 0));
  const isRelative = (spec) => /^(\/|\.\.?(\/|$))/.test(spec);
  const def = (o, k, v, get) =>
    Object.defineProperty(o, k, get ? { enumerable: true, get: v } : { value: v });
  const copyProps = (to, from) =>  // esbuild's __copyProps: getters for the keys `to` lacks
    Object.keys(from).reduce((o, k) => (k in o ? o : def(o, k, () => from[k], true)), to);
  const sourceURL = (rec, c) => '\n//# sourceURL=' + urlOf(rec.path) +  // c: line 1's text column
    (rec.maps && c ? '\n//# sourceMappingURL=' + urlOf('~map/' + rec.path) + '?c=' + c : '');
  // A bundle's call. Row: [id, path, [[specifier, id or barrel view], …], source, ESM table?]
  function define(e, entry, rows, opts) {
    if (e !== epoch) { epoch = e; byId = []; }  // the server restarted: its ids are new
    const shim = opts && opts.shim ? opts : null, maps = !!(opts && opts.maps);
    for (const [id, path, deps, src, esm] of rows)  // or [id, null, units, [[unit, line, code], …]]
      if (path === null) more(byId[id], deps, src);
      else byId[id] = byPath[path] ||= { table: byId, path, deps, src, esm, shim, maps };
    return { entry: byId[entry] || null };
  }
  function more(rec, units, code) {  // statements tree shaking left out: run in the module's scope
    rec.esm.k = units;  // the units held (null: all), for p=; each runs once (answers may cross)
    const todo = code.filter(([u]) => !(rec.got ||= {})[u] && (rec.got[u] = 1));
    (rec.todo ||= []).push(...todo.map(([, n, c]) => '\n'.repeat(n - 1) + c + sourceURL(rec)));
    if (rec.done) for (const c of rec.todo.splice(0)) rec.api.x(c);  // once the body has run
  }
  const fail = ({ status, module, message, chain = [] }) =>  // an error answer: the require's Error
    error(message + (chain.length ? '\n  required by: ' + chain.join(' -> ') : ''),
      { status, module, chain, ...(status === 404 && { code: 'MODULE_NOT_FOUND' }) });
  function join(dir, spec) {  // null when the path climbs above the root
    const out = spec.charAt(0) === '/' ? [] : dir.split('/').filter(Boolean);
    for (const part of spec.split('/'))
      if (part === '..') { if (!out.length) return null; out.pop(); }
      else if (part !== '.' && part !== '') out.push(part);
    return out.join('/');
  }
  const nameFrom = (from, spec, name = isRelative(spec) ? join(dirname(from), spec) : null) =>
    (name === null ? spec : '/' + name);  // relative to `from`, absolute unless it climbs out
  function findDelivered(dir, spec) {  // by Node's rules, among the modules the page holds
    const rel = isRelative(spec), bases = rel ? [join(dir, spec)].filter((p) => p !== null) : [];
    for (let d = dir; !rel; d = dirname(d)) {  // a package: node_modules of each directory up
      if (!/(^|\/)node_modules$/.test(d)) bases.push((d ? d + '/' : '') + 'node_modules/' + spec);
      if (!d) break;
    }
    const exts = ['', '.js', '.json', '/index.js', '/index.json'];
    const hit = bases.flatMap((b) => exts.map((x) => b + x)).find((f) => byPath[f]);
    return hit ? byPath[hit] : null;
  }
  function processFor(opts) {  // `process` for the shim: the page's own, else a minimal one
    if (typeof global.process !== 'undefined') return global.process;
    const p = processShim || (processShim = { title: 'browser', browser: true, env: opts.env || {},
      argv: [], version: '', versions: {}, platform: 'browser', cwd: () => '/', listeners: () => [],
      nextTick: (fn, ...args) => { Promise.resolve().then(() => fn(...args)); } });
    for (const k of ['on', 'once', 'off', 'emit', 'removeListener']) p[k] = () => p;
    return p;
  }
  // `(function<head> {source\n})`, lines kept, named for devtools; shim: process, global parameters
  function compile(rec, head) {
    const f = `(function${head} {${rec.src}\n})`, w = rec.shim ? `((process, global) => ${f})` : f;
    const run = indirectEval(w + sourceURL(rec, w.indexOf('{') + 1));
    return rec.shim ? run(processFor(rec.shim), global) : run;
  }
  function load(rec) {  // a CommonJS module's exports, running it the first time
    if (rec.module) return rec.module.exports;  // done, or running (a cycle sees partial exports)
    const module = (rec.module = { id: rec.path, filename: '/' + rec.path, exports: {} });
    module.loaded = false;
    try {
      if (/\.json$/.test(rec.path)) module.exports = JSON.parse(rec.src);
      else compile(rec, ' (exports, require, module, __filename, __dirname)').call(module.exports,
        module.exports, makeRequire(rec), module, module.filename, '/' + dirname(rec.path));
    } catch (e) { rec.module = null; throw e; }  // as in Node: a module that threw is not cached
    module.loaded = true;
    return module.exports;
  }
  function nsOf(rec) {  // ES modules: namespace (getters, sorted names), link (1st generator step)
    if (rec.ns) return rec.ns;
    const ns = rec.ns = def(Object.create(null), Symbol.toStringTag, 'Module');
    if (!rec.esm) return ns;  // a CommonJS module's: filled once it has run (cjsNs)
    const ex = exportsOf(rec, []);
    for (const n of Object.keys(ex).sort()) if (ex[n]) def(ns, n, ex[n], true);
    if (!rec.cjsStars) Object.preventExtensions(ns);
    const api = rec.api = { e: (getters) => { rec.locals = getters; }, ns: (k) => nsOf(dep(rec, k)),
      meta: { url: urlOf(rec.path) }, import: (s) => entryFor(nameFrom(rec.path, String(s)))
        .then((d) => (d.esm ? (evaluate(d), d.ns) : cjsNs(d))) };
    (rec.gen = compile(rec, '* (__csgi)').call(undefined, api)).next();
    for (const [k, name] of rec.esm.i)  // linking fails on a name the module does not export
      if (dep(rec, k).esm && !(name in nsOf(dep(rec, k)))) throw (rec.error = new SyntaxError(
        `The requested module '${rec.deps[k][0]}' does not provide an export named '${name}'`));
    return ns;
  }
  function dep(rec, k) {  // what rec imports as its k-th request
    const t = rec.deps[k], d = t && (Array.isArray(t[1]) ? view(rec, k, t[1]) : rec.table[t[1]]);
    if (!d) throw new Error(`module '${t ? t[0] : k}' imported by ${rec.path} was not delivered`);
    return d;
  }
  function view(rec, k, deps) {  // a barrel left out: re-exports [name, id, name there] of others
    const views = rec.views || (rec.views = []), path = rec.path + ' > ' + rec.deps[k][0];
    const esm = { x: [], s: [], i: [], r: deps.map((t, j) => [t[0], j, t[2]]) };
    return views[k] || (views[k] = { table: rec.table, shim: rec.shim, path, src: '', esm, deps });
  }
  function exportsOf(rec, seen) {  // export name -> getter; names two `export *` give are left out
    const out = Object.create(null), from = Object.create(null);
    if (seen.includes(rec)) return out;
    seen.push(rec);
    for (const k of rec.esm.s) {
      const d = dep(rec, k), sub = d.esm ? exportsOf(d, seen) : null;
      if (!sub) { (rec.cjsStars = rec.cjsStars || []).push(d); continue; }
      for (const n of Object.keys(sub).filter((n) => n !== 'default'))
        [out[n], from[n]] = [from[n] && from[n] !== d ? null : sub[n], d];
    }
    for (const n of rec.esm.x) out[n] = () => rec.locals[n]();
    for (const [name, k, there] of rec.esm.r) {
      const d = dep(rec, k);
      out[name] = there === '*' ? () => nsOf(d) : () => nsOf(d)[there];
    }
    return out;
  }
  function cjsNs(rec) {  // esbuild's __toESM: default = module.exports (unless __esModule), getters
    if (rec.error) throw rec.error;  // imported, a module runs once: its error stays, as for ESM
    let ns = nsOf(rec), ex;
    try { ex = load(rec); } catch (e) { rec.error = e; throw e; }
    if (rec.filled) return ns;
    rec.filled = true;
    if (!(ex && ex.__esModule)) def(ns, 'default', () => ex, true);
    return copyProps(ns, Object(ex));
  }
  function evaluate(rec) {
    if (rec.error) throw rec.error;
    if (rec.started) return;  // done, or in progress (a cycle: its bindings are as far as they got)
    rec.started = !!nsOf(rec);  // linked (a link error leaves it not started)
    try {
      rec.deps.forEach((t, k) => { const d = dep(rec, k); if (d.esm) evaluate(d); else cjsNs(d); });
      for (const d of rec.cjsStars || []) copyProps(rec.ns, cjsNs(d));
      rec.done = rec.gen.next().done;  // the body ran: then what later bundles added to it
      more(rec, rec.esm.k, []);
    } catch (e) { rec.error = e; throw e; }
  }
  const exportsFor = (rec) => (rec.esm ? (evaluate(rec), rec.ns) : load(rec));
  function makeRequire(rec) {
    function require(spec, cb) {
      if (arguments.length > 1) return csgiRequire(nameFrom(rec.path, spec), cb);
      const t = rec.deps.find((p) => p[0] === spec);
      const d = (t && rec.table[t[1]]) || findDelivered(dirname(rec.path), String(spec));
      if (!d) throw error(`Cannot find module '${spec}' required from ${rec.path}: it was not ` +
        'delivered (require(expr) and two-argument require are not bundled; load it first with ' +
        'require(name, callback))', { code: 'MODULE_NOT_FOUND', module: spec, chain: [rec.path] });
      if (!d.esm) return load(d);
      evaluate(d);  // an ES module: its namespace as CommonJS exports, made once
      return d.cjs || (d.cjs = copyProps(def({}, '__esModule', true), d.ns));
    }
    return Object.assign(require, { async: (spec) => require(spec, null) });
  }
  function urlFor(name) {  // have=: the loaded set: bit b of character i is id 6i+b, A's trimmed
    const path = isRelative(name) ? join('', name) : '~/' + name, bits = [];
    byId.forEach((rec, id) => { bits[id / 6 | 0] |= 1 << id % 6; });
    const p = byId.flatMap((r, id) => (r.esm?.k != null ? [id + '.' + r.esm.k] : [])).join(',');
    const have = Array.from(bits, (v) => B64[v | 0]).join('').replace(/A+$/, '');
    return path === null ? null : `${urlOf(path)}?e=${epoch}&have=${have}${p && '&p=' + p}`;
  }
  async function fetchText(url) {  // the body, whatever the status when it is the server's error
    const r = await fetch(url, { credentials: 'same-origin' }), text = await r.text();
    if (r.ok || /^csgiRequire\.fail\(/.test(text)) return text;
    throw error(`GET ${url}: HTTP ${r.status}`, { status: r.status });
  }
  function entryFor(name) {  // a promise of the module's record; one request per URL at a time
    const known = aliases[name] || (isRelative(name) ? findDelivered('', name) : null);
    if (known && known.esm?.k == null) return Promise.resolve(known);  // here (whole): no request
    const url = urlFor(name), outside = `module '${name}' is outside the bundle root`;
    if (!url) return Promise.reject(error(outside, { status: 403, module: name, chain: [] }));
    return pending[url] || (pending[url] = (async () => {  // the bundle, evaluated
      const res = indirectEval(await csgiRequire.fetchText(url));
      if (res instanceof Error) throw res;
      if (!res || !res.entry) throw new Error(`the bundle for '${name}' did not deliver it`);
      return (aliases[name] = res.entry);
    })().finally(() => delete pending[url]));
  }
  function csgiRequire(name, cb) {
    if (arguments.length > 1) {  // asynchronous: cb(err, exports), else a Promise
      const p = entryFor(String(name)).then(exportsFor);
      return typeof cb !== 'function' ? p : void p.then((x) => { cb(null, x); }, (e) => { cb(e); });
    }
    const rec = aliases[name] || findDelivered('', String(name));
    if (rec && rec.esm?.k == null) return exportsFor(rec);
    throw error(`module '${name}' is not loaded (whole) yet: use require(name, callback) or ` +
      'require.async(name)', { code: 'MODULE_NOT_FOUND', module: name, chain: [] });
  }
  Object.assign(csgiRequire, { define, fail, url: urlFor, async: (name) => csgiRequire(name, null),
    fetchText, modules: () => Object.keys(byPath),  // fetchText: replaceable (tests, other hosts)
    base: (b) => { if (b !== undefined) base = String(b).replace(/\/+$/, ''); return base; } });
  global.csgiRequire = csgiRequire;
  if (typeof global.require === 'undefined') global.require = csgiRequire;
})(typeof globalThis !== 'undefined' ? globalThis : this);
