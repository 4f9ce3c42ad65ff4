const Papa = require('papaparse');
const r = Papa.parse('a,b\n1,"x,y"\n2,z', { header: true, dynamicTyping: true });
print(JSON.stringify(r.data) + ' ' + Papa.unparse([{ a: 1, b: 'q"r' }]).replace(/\r\n/g, '|'));
