import mitt from 'mitt';
const e = mitt(); const seen = [];
e.on('*', (t, v) => seen.push('*' + t + v)); e.on('a', (v) => seen.push('a' + v));
e.emit('a', 1); e.off('a'); e.emit('a', 2);
print(seen.join(','));
