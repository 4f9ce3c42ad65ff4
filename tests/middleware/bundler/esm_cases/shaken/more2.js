// Loaded at the same time as more.js: both answers carry Base and Derived, which must run once.
import { Base, Derived } from './lib.js';
export const check = (x) => (x instanceof Base) + ' ' + (x instanceof Derived) + ' ' + (x.constructor === Derived);
