import { a, incA, b, bump, cns, d, more } from './lib/index.js';
print('a: ' + a + ' ' + more);
incA();
print('live: ' + a + ' ' + more);
print('b: ' + b() + ' ' + (bump(), b()));
print('namespace re-export: ' + cns.c + ' ' + Object.keys(cns).join(','));
print('d: ' + d);
try { a = 3; } catch (e) { print('assign to import: ' + e.name); }
import('./lib/index.js').then((ns) => {
  print('whole: ' + Object.keys(ns).join(','));
  print('same bindings: ' + ns.a + ' ' + (ns.b === b) + ' ' + (ns.cns === cns) + ' ' + ns.m);
  print('END');
}, (e) => print('rejected: ' + e.message));
