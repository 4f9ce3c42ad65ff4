import * as self from './dep.js';
print('static first');
import('./lazy.js').then((ns) => {
  print('lazy: ' + ns.x + ' ' + Object.keys(ns).join(','));
  return import('./dep.js');
}).then((ns) => {
  print('same namespace: ' + (ns === self));
  const p1 = import('./throws.js'), p2 = import('./throws.js');
  return Promise.all([p1.catch((e) => e), p2.catch((e) => e)]);
}).then(([e1, e2]) => {
  print('errors: ' + e1.message + ' same: ' + (e1 === e2));
  return import('./bad-import.js');
}).then(() => print('linked?'), (e) => {
  print('link error: ' + e.name + ': ' + e.message);
  return import('./bad-import.js').catch((e2) => print('again: ' + e2.message));
}).then(() => {
  print('END');
});
