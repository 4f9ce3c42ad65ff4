const _ = require('lodash');
print(JSON.stringify(_.chunk([1, 2, 3, 4, 5], 2)) + ' ' + _.kebabCase('Foo Bar') + ' ' + _.template('hi <%= n %>')({ n: 'x' }));
print(JSON.stringify(_.groupBy(['one', 'two', 'three'], 'length')) + ' ' + _.isEqual({ a: [1] }, { a: [1] }));
