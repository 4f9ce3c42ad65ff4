import { createApp, h, ref, computed, nextTick } from 'vue';
const count = ref(2);
const double = computed(() => count.value * 2);
const el = document.createElement('div');
createApp({ render: () => h('span', { id: 's' }, `${count.value} ${double.value}`) }).mount(el);
print(el.innerHTML);
count.value = 5;
globalThis.__wait = nextTick().then(() => print(el.innerHTML));
