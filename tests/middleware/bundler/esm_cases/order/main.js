print('main body');
import './a.js';
import { b } from './b.js';
print('main sees ' + b);
