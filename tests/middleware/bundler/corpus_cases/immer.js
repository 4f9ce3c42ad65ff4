import { produce, enablePatches, produceWithPatches, freeze } from 'immer';
enablePatches();
const base = { list: [{ t: 'a', done: false }], n: 1 };
const next = produce(base, (d) => { d.list.push({ t: 'b', done: true }); d.n++; });
print(JSON.stringify(next) + ' ' + (next.list[0] === base.list[0]) + ' ' + Object.isFrozen(next));
const [, patches] = produceWithPatches(base, (d) => { d.n = 9; });
print(JSON.stringify(patches));
try { produce(base, (d) => { d.n = 2; return { x: 1 }; }); } catch (e) { print('error: ' + e.message.slice(0, 60)); }
print(Object.isFrozen(freeze({ a: 1 })));
