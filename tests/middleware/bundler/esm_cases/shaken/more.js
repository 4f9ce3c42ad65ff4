import { Derived, Base, count, inc, table } from './lib.js';
export const made = new Derived();
export function report() {
  inc();
  return new Derived().hello() + ' ' + (new Derived() instanceof Base) + ' ' + count + ' ' + table.b;
}
