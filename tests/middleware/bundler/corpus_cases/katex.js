import katex from 'katex';
const s = katex.renderToString('\\frac{a}{b} + \\sqrt{x^2}', { output: 'mathml' });
print(s);
try { katex.renderToString('\\frac{'); } catch (e) { print(e.name + ': ' + e.message.slice(0, 60)); }
