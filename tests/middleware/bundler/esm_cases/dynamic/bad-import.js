import { nope } from './dep.js';
print('never evaluated ' + nope);
