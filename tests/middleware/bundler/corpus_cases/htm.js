import htm from 'htm';
const h = (type, props, ...children) => ({ type, props, children });
const html = htm.bind(h);
print(JSON.stringify(html`<div id=${'a'} class="c"><b>x</b>${1}</div>`));
