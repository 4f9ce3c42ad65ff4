// CommonJS with process.env.NODE_ENV; react-dom/server through react-dom's browser map.
import React from 'react';
import { renderToString } from 'react-dom/server';
import { flushSync } from 'react-dom';
import { createRoot } from 'react-dom/client';
const h = React.createElement;
function List({ items }) { const [n] = React.useState(items.length); return h('ul', { title: 'n=' + n }, items.map((x) => h('li', { key: x }, x))); }
print(renderToString(h(List, { items: ['a', 'b', 'c'] })));
const el = document.createElement('div');
const root = createRoot(el);
flushSync(() => root.render(h('p', { className: 'x' }, 'hello ', 42)));
print(el.innerHTML);
print(React.version + ' ' + typeof React.Component);
