import * as R from 'ramda';
print(R.pipe(R.map(R.multiply(2)), R.filter(R.gt(R.__, 4)), R.sum)([1, 2, 3, 4]));
print(R.toString(R.groupBy(R.prop('t'), [{ t: 'a', v: 1 }, { t: 'b' }, { t: 'a' }])));
