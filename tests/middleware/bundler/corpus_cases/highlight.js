import hljs from 'highlight.js/lib/core';
import javascript from 'highlight.js/lib/languages/javascript';
import xml from 'highlight.js/lib/languages/xml';
hljs.registerLanguage('javascript', javascript);
hljs.registerLanguage('xml', xml);
print(hljs.highlight('const x = 1; // hi', { language: 'javascript' }).value);
print(hljs.highlightAuto('<a href="x">t</a>').language);
