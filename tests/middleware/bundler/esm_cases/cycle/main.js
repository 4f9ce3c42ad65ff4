import { a, callB } from './a.js';
print('main: ' + a + ' ' + callB());
