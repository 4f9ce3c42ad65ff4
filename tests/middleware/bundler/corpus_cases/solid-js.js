import { createSignal, createMemo, createRoot, createEffect, batch } from 'solid-js';
createRoot(() => {
  const [a, setA] = createSignal(1);
  const d = createMemo(() => a() * 2);
  batch(() => { setA(5); });
  print(a() + ' ' + d());
});
