// Tree shaking (production): main.js takes two names; more.js and the namespace import take the rest
// later, and each must find them in the one instance of this module.
export let count = 0;
export function inc() { count++; return count; }
export class Base { hello() { return 'base'; } }
export class Derived extends Base { hello() { return 'derived>' + super.hello(); } }
export const table = { a: 1, b: 2, [Symbol.iterator]: undefined };
export const made = /* @__PURE__ */ makeThing('made');
function makeThing(x) { return { x, kind: Base.name }; }
export default function greet(n) { return 'hi ' + n; }
export const LATER = 'later', AFTER = () => LATER + '!';
const unused = new Map();
print('lib evaluated');
