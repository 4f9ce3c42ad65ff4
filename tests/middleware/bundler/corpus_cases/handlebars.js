// The browser field names the prebuilt CommonJS build (main is the Node one, which needs fs).
const Handlebars = require('handlebars');
Handlebars.registerHelper('up', (s) => String(s).toUpperCase());
print(Handlebars.compile('{{#each xs}}[{{up this}}]{{/each}} {{{raw}}} {{esc}}')({ xs: ['a', 'b'], raw: '<b>', esc: '<i>' }));
