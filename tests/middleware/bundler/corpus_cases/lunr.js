const lunr = require('lunr');
const idx = lunr(function () {
  this.ref('id'); this.field('body');
  this.add({ id: 'a', body: 'the quick brown fox' }); this.add({ id: 'b', body: 'jumps over the lazy dog' }); this.add({ id: 'c', body: 'foxes are quick' });
});
print(idx.search('quick').map((r) => r.ref + ':' + r.score.toFixed(4)).join(',') + ' ' + idx.search('dog').length);
