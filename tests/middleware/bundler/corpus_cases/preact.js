import { h, render, Fragment } from 'preact';
import { useState } from 'preact/hooks';
function C() { const [v] = useState(3); return h(Fragment, null, h('b', null, v), h('i', { class: 'k' }, 'x')); }
const el = document.createElement('div');
render(h(C), el);
print(el.innerHTML);
