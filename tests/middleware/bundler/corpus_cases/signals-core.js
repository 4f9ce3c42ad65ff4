import { signal, computed, effect, batch } from '@preact/signals-core';
const a = signal(1); const b = computed(() => a.value * 3); const seen = [];
effect(() => seen.push(b.value));
batch(() => { a.value = 2; a.value = 4; });
print(seen.join(',') + ' ' + b.peek());
