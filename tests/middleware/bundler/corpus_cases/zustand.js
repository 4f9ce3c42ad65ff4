import { createStore } from 'zustand/vanilla';
const store = createStore((set) => ({ n: 0, inc: () => set((s) => ({ n: s.n + 1 })) }));
const seen = [];
store.subscribe((s) => seen.push(s.n));
store.getState().inc(); store.getState().inc();
print(seen.join(',') + ' ' + store.getState().n);
