import def, { one, two as deux, Klass, fn, v, "quoted name" as quoted, dx, dz, drest } from './lib.js';
import anon from './anon.js';
import AnonClass from './anon-class.js';
import * as ns from './lib.js';
import value, * as ns2 from './value.js';
import { default as value2 } from './value.js';
import { c, sub, fromStar, own } from './reexport.js';
import './side.js';

print('default: ' + def);
print('named: ' + one + ' ' + deux + ' ' + new Klass().k() + ' ' + fn() + ' ' + v);
print('quoted: ' + quoted);
print('anonymous function: ' + typeof anon + ' ' + anon.name + ' ' + anon());
print('anonymous class: ' + typeof AnonClass + ' ' + new AnonClass().x);
print('namespace keys: ' + Object.keys(ns).join(','));
print('namespace tag: ' + Object.prototype.toString.call(ns) + ' ' + ns[Symbol.toStringTag]);
print('namespace extensible: ' + Object.isExtensible(ns) + ' proto ' + Object.getPrototypeOf(ns));
print('namespace same: ' + (ns2.default === value) + ' ' + (value === value2) + ' ' + Object.keys(ns2).join(','));
print('re-exports: ' + c + ' ' + Object.keys(sub).join(',') + ' ' + fromStar + ' ' + own);
try { ns.one = 5; print('assigned'); } catch (e) { print('assign to namespace: ' + e.name); }
print('this: ' + this);
print('strict: ' + (function () { return this; })());
print('meta: ' + import.meta.url.split('/').pop());
print('side effect ran: ' + globalThis.sideRan);
print('destructured: ' + dx + ' ' + dz + ' ' + JSON.stringify(drest));
