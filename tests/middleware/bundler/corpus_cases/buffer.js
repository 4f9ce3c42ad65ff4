const { Buffer } = require('buffer/');
const b = Buffer.from('héllo wörld', 'utf8');
print(b.toString('base64') + ' ' + b.toString('hex').slice(0, 12) + ' ' + b.length + ' ' + Buffer.concat([b.subarray(0, 2), Buffer.alloc(2, 1)]).toJSON().data);
