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
function local(x) { return 'param ' + x; }
function hoisted() { if (true) { var f = 'var f'; } return f; }
const arrow = (a, x) => { return a + x; };
print(local('p') + ' ' + hoisted() + ' ' + arrow('a', 'b') + ' ' + x);
{ let x = 'block'; print(x + ' ' + f()); }
try { throw 'caught'; } catch (x) { print(x); }
for (const x of ['loop']) { print(x); }
print(x + ' ' + f());
