const classNames = require('classnames');
const dedupe = require('classnames/dedupe');
print(classNames('a', { b: true, c: false }, ['d', null, { e: 1 }]) + ' | ' + dedupe('a b', 'a', { b: false }));
