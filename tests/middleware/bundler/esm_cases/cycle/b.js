import { a, aFn } from './a.js';
print('b runs, aFn() = ' + aFn());
try { print('a = ' + a); } catch (e) { print('b reads a: ' + e.name + ': ' + e.message); }
export let b = 'b value';
export function bFn() { return 'bFn sees ' + typeof aFn; }
