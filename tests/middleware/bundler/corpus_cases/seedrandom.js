const seedrandom = require('seedrandom');
const rng = seedrandom('hello.');
print([rng(), rng(), rng.int32()].join(',') + ' ' + seedrandom.alea('x')().toFixed(10));
