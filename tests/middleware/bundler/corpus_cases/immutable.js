import { Map, List, fromJS, is } from 'immutable';
const m = Map({ a: 1 }).set('b', 2).update('a', (x) => x + 10);
const l = List([1, 2, 3]).push(4).filter((x) => x % 2 === 0);
print(JSON.stringify(m) + ' ' + l.toJS() + ' ' + is(fromJS({ x: [1] }), fromJS({ x: [1] })) + ' ' + fromJS({ x: { y: [5] } }).getIn(['x', 'y', 0]));
