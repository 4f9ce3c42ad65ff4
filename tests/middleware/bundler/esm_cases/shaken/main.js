import { inc, count } from './lib.js';
print('count ' + count + ' ' + inc() + ' ' + count);
import('./more.js').then((m) => {
  print(m.report());
  return import('./lib.js');
}).then((ns) => {
  print(Object.keys(ns).join(','));
  print(ns.default('x') + ' ' + ns.made.x + ' ' + ns.made.kind + ' ' + ns.AFTER() + ' ' + ns.count);
  print('END');
}, (e) => print('failed: ' + e.message + '\nEND'));
