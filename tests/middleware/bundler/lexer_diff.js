'use strict';
// Differential test of the dependency scanner against a real parser (ctest bundler_lexer_diff):
//   node lexer_diff.js <csgi-bundle> <dir with node_modules/acorn, acorn-walk> <dir>...
// Every .js file under the given directories (npm code no one here wrote: ramda, playwright-core, acorn,
// …) is parsed by acorn; the reference dependencies are the calls `require('literal')` with one argument
// whose callee is an unshadowed identifier `require` (parameter or declaration in an enclosing function
// or block). The scanner must find the same set for every file, report ES module syntax exactly for the
// files that only parse as modules with import/export declarations, and never fail on a file acorn
// accepts.
// ES modules (the files acorn parses only with sourceType "module", .mjs included) also go through the
// import/export transform, checked against acorn's tree: the same import requests in the same order, the
// same export names, exactly the references to imported bindings rewritten (every Identifier node naming
// one that no enclosing scope redeclares, nothing else), and a result that parses as the loader's
// generator function. A refusal is allowed only for the documented limits (a local of an import's name
// the bundler cannot scope, top-level await, destructuring exports, import attributes); any other
// refusal of a file acorn accepts is a difference.
const assert = require('assert');
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');

const [tool, refDir, ...dirs] = process.argv.slice(2);
const acorn = require(path.resolve(refDir, 'node_modules/acorn'));
const walk = require(path.resolve(refDir, 'node_modules/acorn-walk'));

function files(dir, out = []) {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) files(p, out);
    else if (e.isFile() && /\.(c?js|mjs)$/.test(e.name)) out.push(p);
  }
  return out;
}

function declares(node, name) {
  const body = node.type === 'Program' || node.type === 'BlockStatement' ? node.body
    : node.body && node.body.type === 'BlockStatement' ? node.body.body : [];
  if (/Function/.test(node.type)) {
    if (node.params.some((p) => p.type === 'Identifier' && p.name === name)) return true;
    if (node.type === 'FunctionExpression' && node.id && node.id.name === name) return true;
  }
  for (const s of body) {
    // A top-level `var require` of a CommonJS file redeclares the wrapper's parameter: it holds the
    // module's require until assigned (events' tests wrap it so), and the bundle needs what it loads.
    if (node.type === 'Program' && node.sourceType === 'script' && s.type === 'VariableDeclaration' && s.kind === 'var') continue;
    if (s.type === 'VariableDeclaration' && s.declarations.some((d) => d.id.type === 'Identifier' && d.id.name === name)) return true;
    if (s.type === 'FunctionDeclaration' && s.id && s.id.name === name) return true;
  }
  return false;
}

function reference(src) {
  let ast, module = false;
  const opts = { ecmaVersion: 'latest', allowHashBang: true, allowReturnOutsideFunction: true };
  try { ast = acorn.parse(src, { ...opts, sourceType: 'script' }); } catch (e) {
    try { ast = acorn.parse(src, { ...opts, sourceType: 'module' }); module = true; } catch (e2) { return null; }
  }
  const deps = new Set();
  walk.ancestor(ast, {
    CallExpression(node, _state, ancestors) {
      const c = node.callee;
      if (c.type !== 'Identifier' || c.name !== 'require' || node.arguments.length !== 1) return;
      const a = node.arguments[0];
      let spec = null;
      if (a.type === 'Literal' && typeof a.value === 'string') spec = a.value;
      else if (a.type === 'TemplateLiteral' && a.expressions.length === 0) spec = a.quasis[0].value.cooked;
      if (spec === null) return;
      for (const anc of ancestors.slice(0, -1)) if (anc !== node && declares(anc, 'require')) return;
      deps.add(spec);
    },
  });
  const esm = module && ast.body.some((s) => /^(Import|Export)/.test(s.type));
  return { deps, esm, ast: module ? ast : null, tree: ast, module };
}

// What the transform must do to an ES module, by acorn: requests, export names, rewritten references.
function esmReference(ast) {
  const requests = [], exports = [], locals = new Set(), skip = [];
  for (const s of ast.body) {
    if (s.source && !requests.includes(s.source.value)) requests.push(s.source.value);
    if (s.type === 'ImportDeclaration') {
      skip.push([s.start, s.end]);
      for (const sp of s.specifiers) if (sp.type !== 'ImportNamespaceSpecifier') locals.add(sp.local.name);
    } else if (s.type === 'ExportNamedDeclaration') {
      if (s.declaration) {
        const d = s.declaration;
        if (d.declarations) for (const v of d.declarations) exports.push(v.id.name);
        else exports.push(d.id.name);
      } else {
        skip.push([s.start, s.end]);
        for (const sp of s.specifiers) exports.push(sp.exported.name !== undefined ? sp.exported.name : sp.exported.value);
      }
    } else if (s.type === 'ExportDefaultDeclaration') exports.push('default');
    else if (s.type === 'ExportAllDeclaration' && s.exported) exports.push(s.exported.name || s.exported.value);
  }
  const refs = new Set();
  walk.fullAncestor(ast, (node, _st, ancestors) => {
    if (node.type !== 'Identifier' || !locals.has(node.name) || skip.some(([a, b]) => node.start >= a && node.end <= b)) return;
    for (let k = ancestors.length - 2; k > 0; k--) if (scopeDeclares(ancestors[k], node.name, node)) return;
    refs.add(node.start);
  });
  return { requests, exports: exports.sort(), refs };
}

// Names bound by a pattern; the `var` names of a function body (not of nested functions).
function patternNames(p, out = []) {
  if (!p) return out;
  if (p.type === 'Identifier') out.push(p.name);
  else if (p.type === 'ObjectPattern') for (const q of p.properties) patternNames(q.type === 'RestElement' ? q.argument : q.value, out);
  else if (p.type === 'ArrayPattern') for (const q of p.elements) patternNames(q, out);
  else if (p.type === 'AssignmentPattern') patternNames(p.left, out);
  else if (p.type === 'RestElement') patternNames(p.argument, out);
  return out;
}
function varNames(node, out = []) {
  if (!node || typeof node.type !== 'string') return out;
  if (node.type === 'VariableDeclaration' && node.kind === 'var') for (const d of node.declarations) patternNames(d.id, out);
  for (const [k, v] of Object.entries(node)) {
    if (k === 'type' || !v || typeof v !== 'object') continue;
    for (const c of Array.isArray(v) ? v : [v]) if (c && typeof c.type === 'string' && !/Function/.test(c.type)) varNames(c, out);
  }
  return out;
}
function lexicalNames(statements) {
  const out = [];
  for (const s of statements) {
    if (s.type === 'VariableDeclaration' && s.kind !== 'var') for (const d of s.declarations) patternNames(d.id, out);
    if ((s.type === 'FunctionDeclaration' || s.type === 'ClassDeclaration') && s.id) out.push(s.id.name);
  }
  return out;
}
// Whether `scope` (an ancestor of the Identifier `id`) declares `name` where `id` stands.
function scopeDeclares(scope, name, id) {
  const t = scope.type;
  if (/Function/.test(t)) {
    const inParams = scope.params.some((p) => id.start >= p.start && id.end <= p.end);
    if (scope.params.some((p) => patternNames(p).includes(name))) return true;
    if (t === 'FunctionExpression' && scope.id && scope.id.name === name) return true;
    return !inParams && scope.body.type === 'BlockStatement' && varNames(scope.body).includes(name);
  }
  if (t === 'BlockStatement' || t === 'StaticBlock') return lexicalNames(scope.body).includes(name);
  if (t === 'SwitchStatement') return lexicalNames(scope.cases.flatMap((c) => c.consequent)).includes(name);
  if (t === 'CatchClause') return patternNames(scope.param).includes(name);
  if (t === 'ClassExpression') return !!scope.id && scope.id.name === name;
  const decl = t === 'ForStatement' ? scope.init : (t === 'ForInStatement' || t === 'ForOfStatement') ? scope.left : null;
  return !!decl && decl.type === 'VariableDeclaration' && decl.kind !== 'var' &&
    decl.declarations.some((d) => patternNames(d.id).includes(name));
}

const allowedRefusal = /is imported and also declared here in a way the bundler cannot scope|top-level await|destructuring|import attributes/;
function checkEsm(f, src, ast, got, problems) {
  if (got.esm_error) {
    if (!allowedRefusal.test(got.esm_error)) problems.push(`${f}: transform refused valid module: ${got.esm_error}`);
    if (process.env.VERBOSE) console.log(`refused: ${f}: ${got.esm_error}`);
    return 'refused';
  }
  const ref = esmReference(ast);
  if (JSON.stringify(got.esm_requests) !== JSON.stringify(ref.requests))
    problems.push(`${f}: import requests ${JSON.stringify(got.esm_requests)}, acorn ${JSON.stringify(ref.requests)}`);
  if (JSON.stringify([...got.esm_exports].sort()) !== JSON.stringify(ref.exports))
    problems.push(`${f}: exports ${JSON.stringify(got.esm_exports)}, acorn ${JSON.stringify(ref.exports)}`);
  const bytes = Buffer.from(src);
  const chars = (off) => bytes.subarray(0, off).toString().length;
  const ours = new Set(got.esm_rewrites.map(([b]) => chars(b)));
  const missing = [...ref.refs].filter((x) => !ours.has(x)), extra = [...ours].filter((x) => !ref.refs.has(x));
  if (missing.length || extra.length)
    problems.push(`${f}: rewritten references differ: missing at ${missing.slice(0, 5)} extra at ${extra.slice(0, 5)}`);
  try {
    acorn.parse('(function* (__csgi) {' + got.esm_body + '\n})', { ecmaVersion: 'latest', sourceType: 'script' });
  } catch (e) {
    problems.push(`${f}: transformed module does not parse: ${e.message}`);
  }
  return 'transformed';
}

// The dead code of process.env.NODE_ENV tests (per mode): each range the scanner reports must be an arm of
// an if/else or ?: (or a whole if without else), or the right operand of && or ||, whose test acorn's tree
// makes constant and false for that arm; a range that declares a binding its function sees (var, a sloppy-mode function declaration) must
// say so; and the production text, with the replacements, must parse as the original does, with as many
// line terminators.
function constant(n, mode) {  // the test's value, or undefined when not a constant
  if (n.type === 'Literal' && (typeof n.value !== 'object' || n.value === null) && !n.regex) return n.value;
  if (n.type === 'TemplateLiteral' && n.expressions.length === 0) return n.quasis[0].value.cooked;
  if (n.type === 'MemberExpression' && !n.computed && !n.optional && n.property.name === 'NODE_ENV' &&
      n.object.type === 'MemberExpression' && !n.object.computed && n.object.property.name === 'env' &&
      n.object.object.type === 'Identifier' && n.object.object.name === 'process') return mode;
  if (n.type === 'UnaryExpression' && n.operator === '!') {
    const v = constant(n.argument, mode);
    return v === undefined ? undefined : !v;
  }
  if (n.type === 'BinaryExpression' && /^[!=]==?$/.test(n.operator)) {
    const a = constant(n.left, mode), b = constant(n.right, mode);
    if (a === undefined || b === undefined) return undefined;
    return { '===': a === b, '!==': a !== b, '==': a == b, '!=': a != b }[n.operator];  // eslint-disable-line eqeqeq
  }
  if (n.type === 'LogicalExpression' && n.operator !== '??') {
    const a = constant(n.left, mode);
    if (a === undefined) return undefined;
    if (n.operator === '&&' ? !a : a) return a;
    return constant(n.right, mode);
  }
  return undefined;
}
function hoisted(node, sloppy) {  // a var, or a function declaration in sloppy code, outside nested functions
  if (!node || typeof node.type !== 'string') return false;
  if (node.type === 'VariableDeclaration' && node.kind === 'var') return true;
  if (node.type === 'FunctionDeclaration') return sloppy;
  if (/Function|StaticBlock/.test(node.type)) return false;
  for (const [k, v] of Object.entries(node)) {
    if (k === 'type' || !v || typeof v !== 'object') continue;
    for (const c of Array.isArray(v) ? v : [v]) if (c && typeof c.type === 'string' && hoisted(c, sloppy)) return true;
  }
  return false;
}
const lineTerminators = (s) => (s.match(/\r\n|[\n\r\u2028\u2029]/g) || []).length;
const deadCount = { ranges: 0, replaced: 0, hoisting: 0 };
function checkDead(f, src, ref, got, problems) {
  const bytes = Buffer.from(src);
  const chars = (off) => bytes.subarray(0, off).toString().length;
  const arms = new Map();  // "start:end" → [[the if/?: node, which arm (or the whole if)], …]
  const add = (node, n, which) => {
    const k = `${node.start}:${node.end}`;
    if (!arms.has(k)) arms.set(k, []);
    arms.get(k).push([n, which]);
  };
  walk.full(ref.tree, (n) => {
    if (n.type === 'LogicalExpression' && n.operator !== '??') add(n.right, n, 'right');
    if (n.type !== 'IfStatement' && n.type !== 'ConditionalExpression') return;
    add(n.consequent, n, 'consequent');
    if (n.alternate) add(n.alternate, n, 'alternate');
    else if (n.type === 'IfStatement') add(n, n, 'whole');
  });
  const dead = (n, which, mode) => {
    const v = constant(which === 'right' ? n.left : n.test, mode);
    return v !== undefined && (which === 'alternate' || (which === 'right' && n.operator === '||') ? !!v : !v);
  };
  for (const mode of ['development', 'production']) {
    for (const [b, e, form, hoists] of got.dead[mode].ranges) {
      deadCount.ranges++;
      const s = chars(b), t = chars(e);
      const where = `${f}: ${mode} dead range ${JSON.stringify(src.slice(s, Math.min(t, s + 60)))}`;
      let arm, i = s, j = t;
      for (;;) {  // acorn's nodes leave out enclosing parentheses
        arm = (arms.get(`${i}:${j}`) || []).find(([n, which]) => dead(n, which, mode));
        if (arm || src[i] !== '(' || src[j - 1] !== ')') break;
        for (i++, j--; i < j && /\s/.test(src[i]); i++);
        while (j > i && /\s/.test(src[j - 1])) j--;
      }
      if (!arm) { problems.push(`${where} is not an arm of an if, ?:, && or || whose test acorn finds constant and false for it`); continue; }
      const [n, which] = arm;
      const want = n.type !== 'IfStatement' ? 'expression'
        : which === 'whole' || n[which].type !== 'BlockStatement' ? 'statement' : 'block';
      if (form !== want) problems.push(`${where}: form ${form}, acorn says ${want}`);
      const node = which === 'whole' ? n.consequent : n[which];
      if (!hoists && hoisted(node, !ref.module)) problems.push(`${where}: declares a binding for its function, not reported`);
      if (hoists) deadCount.hoisting++;
    }
    const text = got.dead[mode].text;
    if (text === undefined) continue;
    deadCount.replaced++;
    try {
      acorn.parse(text, { ecmaVersion: 'latest', allowHashBang: true, allowReturnOutsideFunction: true,
        sourceType: ref.module ? 'module' : 'script' });
    } catch (err) {
      problems.push(`${f}: ${mode} text with the dead code replaced does not parse: ${err.message}`);
    }
    if (lineTerminators(text) !== lineTerminators(src)) problems.push(`${f}: ${mode} dead code replaced: line count changed`);
  }
}
// Tree shaking: each unit the bundler may leave out must be one whole top-level declaration as acorn
// parses it, binding the names it reports, and free of side effects by an independent judge over the
// AST (calls and `new` only under a PURE annotation or of a few known pure globals; no assignment, update,
// delete, spread, member read off a non-global, static block or static field); the module with every unit
// replaced by its `let` placeholder must still parse.
const shakeCount = { modules: 0, units: 0 };
const KNOWN_GLOBALS = new Set(['Object', 'Array', 'Symbol', 'Math', 'Number', 'String', 'Boolean', 'JSON', 'Date',
  'RegExp', 'Map', 'Set', 'WeakMap', 'WeakSet', 'WeakRef', 'Promise', 'Error', 'TypeError', 'RangeError',
  'SyntaxError', 'ReferenceError', 'Float32Array', 'Float64Array', 'Int8Array', 'Int16Array', 'Int32Array',
  'Uint8Array', 'Uint8ClampedArray', 'Uint16Array', 'Uint32Array', 'BigInt64Array', 'BigUint64Array',
  'ArrayBuffer', 'DataView', 'Infinity', 'NaN', 'undefined', 'globalThis', 'parseInt', 'parseFloat', 'isNaN',
  'isFinite', 'Reflect', 'Proxy', 'BigInt', 'encodeURIComponent', 'decodeURIComponent', 'encodeURI',
  'decodeURI', 'console', 'Function', 'Intl']);
const PURE_CALLS = new Set(['Symbol', 'Symbol.for', 'Object.freeze', 'Object.create', 'Array.isArray']);
const PURE_NEW = new Set(['Map', 'Set', 'WeakMap', 'WeakSet', 'Float32Array', 'Float64Array', 'Int8Array',
  'Int16Array', 'Int32Array', 'Uint8Array', 'Uint8ClampedArray', 'Uint16Array', 'Uint32Array', 'ArrayBuffer',
  'Object', 'Array']);
const dotted = (n) => (n.type === 'Identifier' ? n.name : n.type === 'MemberExpression' && !n.computed &&
  dotted(n.object) ? dotted(n.object) + '.' + n.property.name : null);
function sideEffects(node, src, bound) {  // a reason, or null when evaluating node only makes a value
  const annotated = (n) => /[@#]__PURE__\s*\*\/[\s(]*$/.test(src.slice(Math.max(0, n.start - 60), n.start));
  const walk = (n) => {
    if (!n || typeof n.type !== 'string') return null;
    switch (n.type) {
      case 'FunctionExpression': case 'ArrowFunctionExpression': case 'FunctionDeclaration': return null;
      case 'Literal': case 'ThisExpression': case 'TemplateElement': return null;
      case 'Identifier': return bound.has(n.name) || KNOWN_GLOBALS.has(n.name) ? null : 'free ' + n.name;
      case 'CallExpression': case 'NewExpression': {
        const known = (n.type === 'CallExpression' ? PURE_CALLS : PURE_NEW).has(dotted(n.callee));
        return annotated(n) || known ? n.arguments.map(walk).find(Boolean) || null : 'call';
      }
      case 'MemberExpression': {
        const d = dotted(n);
        return d && ['Math', 'Symbol', 'Number', 'Object', 'Array', 'String', 'JSON'].includes(d.split('.')[0])
          ? null : 'member';
      }
      case 'AssignmentExpression': case 'UpdateExpression': case 'AwaitExpression': case 'YieldExpression':
      case 'TaggedTemplateExpression': case 'SpreadElement': case 'ImportExpression': case 'StaticBlock':
        return n.type;
      case 'UnaryExpression':
        if (n.operator === 'typeof' && n.argument.type === 'Identifier') return null;
        return n.operator === 'delete' ? 'delete' : walk(n.argument);
      case 'BinaryExpression': return n.operator === 'in' || n.operator === 'instanceof' ? n.operator
        : walk(n.left) || walk(n.right);
      case 'Property': return (n.computed ? walk(n.key) : null) || (n.method || n.kind !== 'init' ? null : walk(n.value));
      case 'MethodDefinition': return n.computed ? walk(n.key) : null;
      case 'PropertyDefinition': return n.static ? 'static field' : n.computed ? walk(n.key) : null;
      case 'ClassDeclaration': case 'ClassExpression':
        return walk(n.superClass) || n.body.body.map(walk).find(Boolean) || null;
      case 'VariableDeclaration': return n.declarations.map((d) => walk(d.init)).find(Boolean) || null;
      default:
        for (const k of Object.keys(n)) {
          if (k === 'start' || k === 'end' || k === 'loc' || k === 'range') continue;
          const v = n[k];
          const r = Array.isArray(v) ? v.map(walk).find(Boolean) : v && typeof v.type === 'string' ? walk(v) : null;
          if (r) return r;
        }
        return null;
    }
  };
  return walk(node);
}
function checkShake(f, src, ast, got, problems) {
  if (!got.shake_units) return;
  shakeCount.modules++;
  const bytes = Buffer.from(src);
  let byteAt = 0, charAt = 0;  // offsets only grow (units are in source order): convert incrementally
  const chars = (off) => {
    charAt += bytes.subarray(byteAt, off).toString().length;
    byteAt = off;
    return charAt;
  };
  const bound = new Set();
  for (const s of ast.body) {
    const d = s.type.startsWith('Export') && s.declaration ? s.declaration : s;
    if (d.type === 'VariableDeclaration') d.declarations.forEach((x) => patternNames(x.id, []).forEach((n) => bound.add(n)));
    else if ((d.type === 'FunctionDeclaration' || d.type === 'ClassDeclaration') && d.id) bound.add(d.id.name);
    else if (d.type === 'ImportDeclaration') d.specifiers.forEach((x) => bound.add(x.local.name));
  }
  let text = '', at = 0;
  for (const [b, e, kind, names] of got.shake_units) {
    shakeCount.units++;
    const s = chars(b), t = chars(e);
    const where = `${f}: unit ${JSON.stringify(src.slice(s, Math.min(t, s + 50)))}`;
    const node = ast.body.find((n) => n.start === s && n.end === t);
    if (!node) { problems.push(`${where}: not a whole top-level statement`); continue; }
    let d = node.type.startsWith('Export') ? node.declaration : node;
    const want = { function: 'FunctionDeclaration', class: 'ClassDeclaration', declarators: 'VariableDeclaration' }[kind];
    let declared;
    if (node.type === 'ExportDefaultDeclaration' && !/Declaration$/.test(d.type)) declared = ['__csgi_default'];
    else if (d.type !== want) { problems.push(`${where}: a ${d.type}, reported as ${kind}`); continue; }
    else if (d.type === 'VariableDeclaration') declared = d.declarations.map((x) => x.id.name);
    else declared = [d.id ? d.id.name : '__csgi_default'];
    if (JSON.stringify(declared) !== JSON.stringify(names)) problems.push(`${where}: binds ${declared}, reported ${names}`);
    const why = sideEffects(d, src, bound);
    if (why) problems.push(`${where}: has side effects (${why})`);
    text += src.slice(at, s) + `let ${names.join(',')};` + '\n'.repeat((src.slice(s, t).match(/\n/g) || []).length);
    at = t;
  }
  text += src.slice(at);
  try {
    acorn.parse(text, { ecmaVersion: 'latest', sourceType: 'module', allowHashBang: true });
  } catch (e) {
    problems.push(`${f}: the module with its units replaced by placeholders does not parse: ${e.message}`);
  }
}

const all = dirs.filter((d) => fs.existsSync(d)).flatMap((d) => files(d));
const ours = new Map();
for (let i = 0; i < all.length; i += 200) {
  const out = execFileSync(tool, ['--deps', ...all.slice(i, i + 200)], { maxBuffer: 1 << 28 }).toString();
  for (const line of out.split('\n')) if (line) { const r = JSON.parse(line); ours.set(r.file, r); }
}

let compared = 0, skipped = 0, edges = 0;
const esmCount = { transformed: 0, refused: 0 };
const problems = [];
for (const f of all) {
  const src = fs.readFileSync(f, 'utf8');
  const ref = reference(src);
  const got = ours.get(f);
  if (!ref) { skipped++; continue; }  // not JavaScript acorn accepts (e.g. flow/JSX): no verdict
  compared++;
  if (got.error) { problems.push(`${f}: scanner error on valid JS: ${got.error}`); continue; }
  if (ref.esm !== got.esm) { problems.push(`${f}: esm ${got.esm}, parser says ${ref.esm}`); continue; }
  if (ref.esm) esmCount[checkEsm(f, src, ref.ast, got, problems)]++;
  if (ref.esm) checkShake(f, src, ref.ast, got, problems);
  if (got.dead) checkDead(f, src, ref, got, problems);
  const g = new Set(got.deps);
  const missing = [...ref.deps].filter((d) => !g.has(d)), extra = [...g].filter((d) => !ref.deps.has(d));
  if (missing.length || extra.length) problems.push(`${f}: missing ${JSON.stringify(missing)} extra ${JSON.stringify(extra)}`);
  edges += ref.deps.size;
}
console.log(`bundler_lexer_diff: ${compared} files (${edges} require edges) compared with acorn, ${skipped} not parsable, ` +
  `ES modules: ${esmCount.transformed} transformed as acorn says, ${esmCount.refused} refused within the documented limits; ` +
  `dead code: ${deadCount.ranges} ranges (both modes) arms of constant tests as acorn says, ${deadCount.hoisting} kept for a ` +
  `declaration, ${deadCount.replaced} texts with them replaced parsed; tree shaking: ${shakeCount.units} units ` +
  `of ${shakeCount.modules} modules whole declarations free of side effects as acorn says; ` +
  `${problems.length} differences`);
for (const p of problems.slice(0, 30)) console.log('  ' + p);
assert.ok(compared > 500, 'enough files compared');
assert.deepStrictEqual(problems, []);
