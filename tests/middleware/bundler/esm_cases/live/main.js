import { count, increment, alias } from './counter.js';
import * as counter from './counter.js';
print('before: ' + count + ' ' + alias + ' ' + counter.count);
increment();
increment();
print('after: ' + count + ' ' + alias + ' ' + counter.count);
const o = { count, increment };
print('shorthand: ' + JSON.stringify(o) + ' ' + typeof o.increment);
print(`template: ${count}`);
print('this in call: ' + increment());
try { count = 5; } catch (e) { print('assign to import: ' + e.name); }
print('still: ' + count);
