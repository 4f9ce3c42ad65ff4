// The npm events package (the browserify substitute for the Node builtin of the same name).
const EventEmitter = require('events');
const e = new EventEmitter(); const seen = [];
e.once('x', (v) => seen.push('once' + v)); e.on('x', (v) => seen.push('on' + v));
e.emit('x', 1); e.emit('x', 2);
print(seen.join(',') + ' ' + e.listenerCount('x') + ' ' + EventEmitter.defaultMaxListeners);
