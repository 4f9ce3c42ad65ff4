import Fuse from 'fuse.js';
const f = new Fuse([{ t: 'apple pie' }, { t: 'banana' }, { t: 'grape' }, { t: 'pineapple' }], { keys: ['t'], includeScore: true });
print(f.search('aple').map((r) => r.item.t + ':' + r.score.toFixed(4)).join(','));
