import { inc, count } from './lib.js';
print('count ' + count + ' ' + inc() + ' ' + count);
Promise.all([import('./more.js'), import('./more2.js')]).then(([m, m2]) => {
  print(m.report());
  print('same classes: ' + m2.check(m.made));
  return import('./lib.js');
}).then((ns) => {
  print(Object.keys(ns).join(','));
  print(ns.default('x') + ' ' + ns.made.x + ' ' + ns.made.kind + ' ' + ns.AFTER() + ' ' + ns.count);
  print('END');
}, (e) => print('failed: ' + e.message + '\nEND'));
