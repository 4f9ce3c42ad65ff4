/* csgi bundler client loader (docs/bundler.md). No dependencies; current browsers (fetch, Promise).
 *   require(name, cb) / require.async(name): load name and what it needs; require(name): one delivered.
 * Inside modules, require('literal') is synchronous (the bundle delivered it); require(name, cb) loads.
 * ES modules (rows with an import/export table) run as the server transformed them: linked, then
 * evaluated depth first in import order, as a browser runs <script type=module>. */
(function (global) {
  'use strict';
  if (global.csgiRequire && global.csgiRequire.define) return;

  var B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  var script = typeof document !== 'undefined' ? document.currentScript : null;
  var base = script && script.src ? script.src.replace(/\/require\.js(?:[?#].*)?$/, '') : '';
  var epoch = '', byId = [];  // module id (this epoch) -> record
  var byPath = Object.create(null), aliases = Object.create(null), inflight = Object.create(null);
  var indirectEval = eval, processShim = null;

  function Rec(table, id, path, deps, src, shim) {
    this.table = table; this.id = id; this.path = path; this.deps = deps; this.src = src; this.module = null;
    this.shim = shim;
  }
  function error(message, props) {  // an Error with the given status, module, chain, code
    var e = new Error(message);
    for (var k in props) if (props[k] !== undefined) e[k] = props[k];
    return e;
  }

  // `process` for modules when the server asks for the shim: the page's own, else a minimal browser one.
  function processFor(opts) {
    if (typeof global.process !== 'undefined') return global.process;
    var noop = function () { return processShim; };
    return processShim || (processShim = { title: 'browser', browser: true, env: opts.env || {}, argv: [],
      version: '', versions: {}, platform: 'browser', cwd: function () { return '/'; }, on: noop, once: noop,
      off: noop, emit: noop, removeListener: noop, listeners: function () { return []; },
      nextTick: function (fn) { var a = [].slice.call(arguments, 1); Promise.resolve().then(function () { fn.apply(null, a); }); } });
  }

  // Called by a bundle response: registers its modules (each evaluated on first require).
  function define(e, entry, mods, opts) {
    if (e !== epoch) { epoch = e; byId = []; }  // the server restarted: its ids are new
    for (var i = 0; i < mods.length; i++) {
      var m = mods[i], rec = byPath[m[1]];
      if (!rec) { rec = byPath[m[1]] = new Rec(byId, m[0], m[1], m[2], m[3], opts && opts.shim ? opts : null); rec.esm = m[4] || null; }
      byId[m[0]] = rec;
    }
    return { entry: byId[entry] || null };
  }
  // Called by an error response: the Error the pending require fails with.
  function fail(info) {
    var chain = info.chain || [];
    return error(info.message + (chain.length ? '\n  required by: ' + chain.join(' -> ') : ''),
      { status: info.status, module: info.module, chain: chain, code: info.status === 404 ? 'MODULE_NOT_FOUND' : undefined });
  }

  function dirname(path) { var i = path.lastIndexOf('/'); return i < 0 ? '' : path.slice(0, i); }
  function join(dir, spec) {  // null when the path climbs above the root
    var out = spec.charAt(0) === '/' ? [] : dir.split('/').filter(Boolean), parts = spec.split('/');
    for (var i = 0; i < parts.length; i++) {
      if (parts[i] === '..') { if (!out.length) return null; out.pop(); } else if (parts[i] !== '.' && parts[i] !== '') out.push(parts[i]);
    }
    return out.join('/');
  }
  function isRelative(spec) { return spec.charAt(0) === '/' || spec === '.' || spec === '..' || /^\.\.?\//.test(spec); }
  function nameFrom(dir, spec) {
    if (!isRelative(spec)) return spec;
    var name = join(dir, spec);
    return name === null ? spec : '/' + name;  // null: let the server refuse it
  }

  // A delivered module by Node's rules among what this page holds (for require(expr) of delivered code).
  function findDelivered(fromDir, spec) {
    var bases = [], d = fromDir, rel = isRelative(spec), p = rel ? join(fromDir, spec) : null;
    if (p !== null) bases.push(p);
    for (; !rel; d = dirname(d)) {  // a package: node_modules of the directory and each parent
      if (!/(^|\/)node_modules$/.test(d)) bases.push((d ? d + '/' : '') + 'node_modules/' + spec);
      if (!d) break;
    }
    for (var i = 0, c = []; i < bases.length; i++) c.push(bases[i], bases[i] + '.js', bases[i] + '.json', bases[i] + '/index.js', bases[i] + '/index.json');
    for (i = 0; i < c.length; i++) if (byPath[c[i]]) return byPath[c[i]];
    return null;
  }

  // With the shim, process and global are parameters of an outer function (a module's own `let process`
  // still works); the source starts on the first line either way.
  function compile(rec, fn) {
    return rec.shim ? indirectEval('(function (process, global) { return ' + fn + '; })')(processFor(rec.shim), global)
      : indirectEval(fn);
  }
  function load(rec) {
    if (rec.esm) { evaluate(rec); return rec.cjs || (rec.cjs = copyProps(def({}, '__esModule', true), rec.ns)); }
    if (rec.module) return rec.module.exports;  // done, or in progress (a cycle sees partial exports)
    var module = rec.module = { id: rec.path, filename: '/' + rec.path, exports: {}, loaded: false };
    try {
      if (/\.json$/.test(rec.path)) module.exports = JSON.parse(rec.src);
      else compile(rec, '(function (exports, require, module, __filename, __dirname) {' + rec.src + '\n})').call(
        module.exports, module.exports, makeRequire(rec), module, '/' + rec.path, '/' + dirname(rec.path));
    } catch (e) {
      rec.module = null;  // as in Node: a module that threw is not cached
      throw e;
    }
    module.loaded = true;
    return module.exports;
  }

  // --- ES modules: namespaces (getters, sorted names), link (first generator step), evaluation ---
  function def(o, k, v, get) { return Object.defineProperty(o, k, get ? { enumerable: true, get: v } : { value: v }); }
  function copyProps(to, from) {  // esbuild's __copyProps: getters for the keys `to` lacks
    Object.keys(from).forEach(function (k) { if (!(k in to)) def(to, k, function () { return from[k]; }, true); });
    return to;
  }
  function dep(rec, spec) {
    var id = rec.deps[spec], d = Array.isArray(id) ? view(rec, spec, id) : rec.table[id];
    if (!d) throw new Error("module '" + spec + "' imported by " + rec.path + ' was not delivered');
    return d;
  }
  // A barrel the server left out: a module re-exporting [name, id, name there] of the modules defining them.
  function view(rec, spec, list) {
    var vs = rec.views || (rec.views = Object.create(null)), v = vs[spec];
    if (v) return v;
    v = vs[spec] = new Rec(rec.table, -1, rec.path + ' > ' + spec, Object.create(null), '', rec.shim);
    v.esm = { d: [], x: [], r: [], s: [], i: [] };
    list.forEach(function (t, k) { v.deps[k] = t[1]; v.esm.d.push(k); v.esm.r.push([t[0], k, t[2]]); });
    return v;
  }
  function exportsOf(rec, seen) {  // export name -> getter; names two `export *` give are left out
    var out = Object.create(null), from = Object.create(null), m = rec.esm;
    if (seen.indexOf(rec) >= 0) return out;
    seen.push(rec);
    m.s.forEach(function (s) {
      var d = dep(rec, s), sub = d.esm ? exportsOf(d, seen) : null;
      if (!sub) return (rec.cjsStars = rec.cjsStars || []).push(d);
      for (var n in sub) if (n !== 'default') { out[n] = from[n] && from[n] !== d ? null : sub[n]; from[n] = d; }
    });
    m.x.forEach(function (n) { out[n] = function () { return rec.locals[n](); }; });
    m.r.forEach(function (r) {
      var d = dep(rec, r[1]);
      out[r[0]] = r[2] === '*' ? function () { return nsOf(d); } : function () { return nsOf(d)[r[2]]; };
    });
    return out;
  }
  function nsOf(rec) {
    if (rec.ns) return rec.ns;
    var ns = rec.ns = def(Object.create(null), Symbol.toStringTag, 'Module');
    if (!rec.esm) return ns;  // a CommonJS module's: filled once it has run (cjsNs)
    var ex = exportsOf(rec, []);
    Object.keys(ex).sort().forEach(function (n) { if (ex[n]) def(ns, n, ex[n], true); });
    if (!rec.cjsStars) Object.preventExtensions(ns);
    var api = { e: function (getters) { rec.locals = getters; }, ns: function (s) { return nsOf(dep(rec, s)); },
      meta: { url: base + '/' + rec.path.split('/').map(encodeURIComponent).join('/') },
      'import': function (s) {
        return entryFor(nameFrom(dirname(rec.path), String(s))).then(function (d) { return d.esm ? (evaluate(d), d.ns) : cjsNs(d); });
      } };
    (rec.gen = compile(rec, '(function* (__csgi) {' + rec.src + '\n})').call(undefined, api)).next();
    rec.esm.i.forEach(function (w) {  // linking fails on a name the imported module does not export
      var d = dep(rec, w[0]);
      if (d.esm && !(w[1] in nsOf(d))) throw (rec.error = new SyntaxError("The requested module '" + w[0] +
        "' does not provide an export named '" + w[1] + "'"));
    });
    return ns;
  }
  function cjsNs(rec) {  // esbuild's __toESM: default = module.exports (unless __esModule), keys as getters
    if (rec.error) throw rec.error;  // imported, a module runs once: its error stays, as for ES modules
    var ns = nsOf(rec), ex;
    try { ex = load(rec); } catch (e) { rec.error = e; throw e; }
    if (!rec.filled) { rec.filled = true; if (!(ex && ex.__esModule)) def(ns, 'default', function () { return ex; }, true); copyProps(ns, Object(ex)); }
    return ns;
  }
  function evaluate(rec) {
    if (rec.error) throw rec.error;
    if (rec.state) return;  // done, or in progress (a cycle: its bindings are as far as they got)
    nsOf(rec);
    rec.state = 1;
    try {
      rec.esm.d.forEach(function (s) { var d = dep(rec, s); if (d.esm) evaluate(d); else cjsNs(d); });
      (rec.cjsStars || []).forEach(function (d) { copyProps(rec.ns, cjsNs(d)); });
      rec.gen.next();
    } catch (e) { rec.error = e; throw e; }
    rec.state = 2;
  }
  function exportsFor(rec) { return rec.esm ? (evaluate(rec), rec.ns) : load(rec); }

  function makeRequire(rec) {
    var dir = dirname(rec.path);
    function require(spec, cb) {
      if (arguments.length > 1 || typeof cb === 'function') return requireAsync(nameFrom(dir, spec), cb);
      var id = rec.deps[spec], d = id !== undefined && rec.table[id] ? rec.table[id] : findDelivered(dir, String(spec));
      if (!d) throw error("Cannot find module '" + spec + "' required from " + rec.path + ': it was not delivered ' +
        '(require(expr) and two-argument require are not bundled; load it first with require(name, callback))',
        { code: 'MODULE_NOT_FOUND', module: spec, chain: [rec.path] });
      return load(d);
    }
    require.async = function (spec) { return require(spec, null); };
    return require;
  }

  function haveBits() {  // the loaded set: bit b of character i is id 6i+b, trailing 'A's trimmed
    for (var s = '', v = 0, i = 0; i < byId.length; i++) {
      if (byId[i]) v |= 1 << i % 6;
      if (i % 6 === 5 || i === byId.length - 1) { s += B64.charAt(v); v = 0; }
    }
    return s.replace(/A+$/, '');
  }
  function urlFor(name) {
    var path = isRelative(name) ? join('', name) : '~/' + name;
    return path === null ? null : base + '/' + path.split('/').map(encodeURIComponent).join('/') + '?e=' + epoch + '&have=' + haveBits();
  }
  function fetchText(url) {  // the body whatever the status when it is the server's error answer
    return fetch(url, { credentials: 'same-origin' }).then(function (r) { return r.text().then(function (t) {
      if (r.ok || /^csgiRequire\.fail\(/.test(t)) return t;
      throw error('GET ' + url + ': HTTP ' + r.status, { status: r.status });
    }); });
  }
  function entryFor(name) {
    var known = aliases[name] || (isRelative(name) ? findDelivered('', name) : null), url = urlFor(name);
    if (known) return Promise.resolve(known);  // already here: no request
    if (url === null) return Promise.reject(error("module '" + name + "' is outside the bundle root", { status: 403, module: name, chain: [] }));
    return inflight[url] || (inflight[url] = csgiRequire.fetchText(url).then(function (text) {
      delete inflight[url];
      var res = indirectEval(text);
      if (res instanceof Error) throw res;
      if (!res || !res.entry) throw new Error("the bundle for '" + name + "' did not deliver it");
      return (aliases[name] = res.entry);
    }, function (err) { delete inflight[url]; throw err; }));
  }
  function requireAsync(name, cb) {
    var p = entryFor(String(name)).then(exportsFor);
    if (typeof cb !== 'function') return p;
    p.then(function (exports) { cb(null, exports); }, function (err) { cb(err); });
  }

  function csgiRequire(name, cb) {
    if (arguments.length > 1 || typeof cb === 'function') return requireAsync(name, cb);
    var rec = aliases[name] || findDelivered('', String(name));
    if (!rec) throw error("module '" + name + "' is not loaded yet: use require(name, callback) or require.async(name)",
      { code: 'MODULE_NOT_FOUND', module: name, chain: [] });
    return exportsFor(rec);
  }
  Object.assign(csgiRequire, { async: function (name) { return requireAsync(name); }, define: define, fail: fail, url: urlFor,
    fetchText: fetchText,  // replaceable transport (tests, other hosts)
    base: function (b) { if (b !== undefined) base = String(b).replace(/\/+$/, ''); return base; },
    modules: function () { return Object.keys(byPath); } });
  // Live reload (the bundler's live_reload option appends a call): follows <mount>/~live and, once a
  // burst of edits has settled, reloads the page or calls onchange(sequence number).
  csgiRequire.live = function (onchange) {
    if (typeof EventSource === 'undefined') return null;
    var es = csgiRequire.events = new EventSource(base + '/~live'), timer = null;
    es.addEventListener('change', function (e) {
      clearTimeout(timer);
      timer = setTimeout(function () { if (onchange) onchange(Number(e.data)); else location.reload(); }, 50);
    });
    return es;
  };

  global.csgiRequire = csgiRequire;
  if (typeof global.require === 'undefined') global.require = csgiRequire;
})(typeof globalThis !== 'undefined' ? globalThis : this);
