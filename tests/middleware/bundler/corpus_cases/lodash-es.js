import { chunk, kebabCase, template, groupBy, debounce, merge, sortBy } from 'lodash-es';
print(JSON.stringify(chunk([1, 2, 3, 4, 5], 2)) + ' ' + kebabCase('Foo Bar') + ' ' + template('hi <%= n %>')({ n: 'x' }));
print(JSON.stringify(groupBy(['one', 'two', 'three'], 'length')) + ' ' + typeof debounce(() => 0, 5));
print(JSON.stringify(merge({ a: { b: 1 } }, { a: { c: 2 } })) + ' ' + JSON.stringify(sortBy([{ n: 3 }, { n: 1 }], 'n')));
