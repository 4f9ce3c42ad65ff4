import {
  where,
  thrower
} from './where.js';
import * as
  unused from './where.js';

function line(stack) { return (/\.js:(\d+):\d+/.exec(stack.split('\n').find((l) => /\.js:\d+/.test(l))) || [])[1]; }
print('main at line ' + line(new Error().stack));
print('where at line ' + where());
try { thrower(); } catch (e) { print('thrown at line ' + line(e.stack)); }
