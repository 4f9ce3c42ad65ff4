import { observable, autorun, computed, action, runInAction } from 'mobx';
const s = observable({ a: 1, b: 2, get sum() { return this.a + this.b; } });
const seen = [];
autorun(() => seen.push(s.sum));
runInAction(() => { s.a = 10; s.b = 20; });
action(() => { s.a = 0; })();
print(seen.join(',') + ' ' + computed(() => s.a * 2).get());
