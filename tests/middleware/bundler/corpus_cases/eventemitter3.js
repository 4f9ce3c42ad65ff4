import EventEmitter from 'eventemitter3';
const e = new EventEmitter(); const seen = [];
e.on('a', function (v) { seen.push(this.tag + v); }, { tag: 'ctx' }); e.emit('a', 1);
print(seen.join(',') + ' ' + e.eventNames().join(','));
