import { b, bFn } from './b.js';
print('a runs, b = ' + b + ', bFn() = ' + bFn());
export let a = 'a value';
export function aFn() { return 'aFn'; }
export function callB() { return b; }
