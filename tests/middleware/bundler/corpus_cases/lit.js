import { html, render, LitElement, css } from 'lit';
const el = document.createElement('div');
const items = ['x', 'y'];
render(html`<ul>${items.map((i) => html`<li class=${i}>${i}</li>`)}</ul>`, el);
print(el.innerHTML.replace(/<!--[^>]*-->/g, ''));
class MyEl extends LitElement {
  static properties = { name: {} };
  static styles = css`p { color: red; }`;
  constructor() { super(); this.name = 'w'; }
  render() { return html`<p>hi ${this.name}</p>`; }
}
customElements.define('my-el-corpus', MyEl);
const e = document.createElement('my-el-corpus');
document.body.appendChild(e);
globalThis.__wait = e.updateComplete.then(() => print(e.shadowRoot.innerHTML.replace(/<!--[^>]*-->/g, '')));
