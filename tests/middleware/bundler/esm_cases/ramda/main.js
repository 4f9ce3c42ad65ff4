// ramda 0.31.3's es/ build (copied here from the corpus by esm_check.js): ~300 modules no one here wrote.
import * as R from './es/index.js';
import { map, pipe, toString, curry, lensProp, over, groupBy } from './es/index.js';
print(Object.keys(R).length + ' exports');
print(JSON.stringify(map((x) => x * 2, [1, 2, 3])));
print(pipe(R.add(1), R.multiply(3), toString)(4));
print(toString({ a: [1, 'b', null], d: new Date(0), s: new Set([1]) }));
print(curry((a, b, c) => a + b + c)(1)(2)(3));
print(JSON.stringify(over(lensProp('n'), R.inc, { n: 1 })));
print(JSON.stringify(groupBy((s) => s.length, ['a', 'bb', 'cc'])));
print(R.equals({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] }) + ' ' + R.clone([{ x: 1 }])[0].x);
