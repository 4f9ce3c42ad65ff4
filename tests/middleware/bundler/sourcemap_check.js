'use strict';
// Source maps through the client loader (ctest bundler_sourcemap):
//   node sourcemap_check.js <csgi-bundle> <require.js> <esbuild>
// A TypeScript module (esbuild's transform moves its lines), an ES module (the bundler's transform moves
// columns) with a define, in development and production (comments left out): the module is evaluated by
// the real loader in a vm context, throws, and the position Error.stack gives for the bundle's text is
// resolved with node's module.SourceMap through the map at the URL the loader wrote in the evaluated
// text's sourceMappingURL: it must name the .ts file and the line and column of the `new Error`.
const assert = require('assert');
const fs = require('fs');
const os = require('os');
const path = require('path');
const vm = require('vm');
const { SourceMap } = require('module');
const { execFileSync } = require('child_process');

const [tool, loaderPath, esbuild] = process.argv.slice(2);
const loader = fs.readFileSync(loaderPath, 'utf8');
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'csgi-sourcemap-'));
const main = [
  "import { twice } from './util';",
  'interface Shape {',
  '  w: number;',
  '  h: number;',
  '}',
  'type Id = string | number;',
  'const env: string = process.env.NODE_ENV; const area = (s: Shape): number => s.w * s.h;',
  'export function boom(id: Id): never {',
  '  // a comment production leaves out',
  "  const why: string = env + twice(area({ w: 1, h: 2 })); throw new Error('boom ' + id + why);",
  '}',
].join('\n');
fs.mkdirSync(path.join(root, 'src'));
fs.writeFileSync(path.join(root, 'src/main.ts'), main);
fs.writeFileSync(path.join(root, 'src/util.ts'), 'export const twice = (n: number): number => n * 2;\n');
const throwLine = 10, throwColumn = main.split('\n')[throwLine - 1].indexOf('new Error');
const base = 'http://x.test/bundle';

function get(args, target) {
  return execFileSync(tool, ['--esbuild', esbuild, ...args, root, target], { stdio: ['ignore', 'pipe', 'ignore'] }).toString();
}

function check(args) {
  const body = get(args, '/src/main.ts');
  assert.ok(!/sourceMappingURL=data:|sourcesContent/.test(body), 'no map inlined in the bundle');
  const ctx = vm.createContext({});
  vm.runInContext('{ const e = eval; globalThis.__evals = []; globalThis.eval = (s) => (__evals.push(s), e(s)); }', ctx);
  vm.runInContext(loader, ctx, { filename: 'require.js' });
  vm.runInContext(`csgiRequire.base(${JSON.stringify(base)})`, ctx);
  vm.runInContext(body, ctx, { filename: 'bundle.js' });
  const stack = vm.runInContext("try { require('/src/main.ts').boom(7); '' } catch (e) { e.stack }", ctx);
  assert.match(stack, /boom 7development4|boom 7production4/, stack);
  const at = stack.match(/http:\/\/x\.test\/bundle\/src\/main\.ts:(\d+):(\d+)/);
  assert.ok(at, 'a frame in src/main.ts: ' + stack);
  const [line, column] = [Number(at[1]), Number(at[2])];
  assert.notStrictEqual(line, throwLine, 'esbuild moved the line (else this check proves nothing)');
  const text = vm.runInContext('__evals', ctx).find((s) => s.includes('sourceURL=' + base + '/src/main.ts'));
  const named = text.match(/\/\/# sourceMappingURL=(\S+)$/);
  assert.ok(named, 'the evaluated text names its source map: ' + text.slice(-160));
  const url = named[1];
  assert.ok(url.startsWith(base + '/~map/src/main.ts?c='), url);
  const map = JSON.parse(get(args, url.slice(base.length)));
  assert.deepStrictEqual(map.sources, ['csgi:///src/main.ts']);
  assert.strictEqual(map.sourcesContent[0], main);
  const entry = new SourceMap(map).findEntry(line - 1, column - 1);
  assert.strictEqual(entry.originalSource, 'csgi:///src/main.ts');
  assert.deepStrictEqual([entry.originalLine + 1, entry.originalColumn], [throwLine, throwColumn],
    `bundle ${line}:${column} resolves to the throw in src/main.ts (${args.join(' ') || 'development'})`);
  return `${line}:${column} -> ${throwLine}:${throwColumn}`;
}

try {
  const dev = check([]);
  const prod = check(['--mode', 'production', '--source-maps', 'on']);
  console.log(`bundler_sourcemap: Error.stack positions resolve to src/main.ts (development ${dev}, production ${prod})`);
} finally {
  fs.rmSync(root, { recursive: true, force: true });
}
