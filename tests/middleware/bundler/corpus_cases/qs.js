const qs = require('qs');
print(qs.stringify({ a: { b: [1, 2] }, c: 'x y' }) + ' ' + JSON.stringify(qs.parse('a[b][c]=d&e=1&e=2')));
