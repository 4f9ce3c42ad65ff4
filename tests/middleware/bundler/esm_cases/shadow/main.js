import { x, f } from './dep.js';
const o = { x: 1, f() { return 'method'; } };
class C { x = 2; f() { return 'class method'; } static x = 3; }
print(o.x + ' ' + o.f() + ' ' + new C().x + ' ' + new C().f() + ' ' + C.x);
print(x ? x : f);
switch (x) { case x: print('case ' + x); break; }
const t = { [x]: x, y: x ? 'yes' : 'no' };
print(JSON.stringify(t));
function g(a) { return a + x + f(); }
print(g(1));
print(typeof x + ' ' + (x instanceof Object) + ' ' + `${x}-${f()}`);
