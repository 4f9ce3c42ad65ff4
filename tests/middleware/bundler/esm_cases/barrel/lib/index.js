// A barrel of a side-effect-free package: the bundler serves named imports from the defining modules.
export * from './a.js';
export { default as b, bump } from './b.js';
export * as cns from './c.js';
import { d } from './d.js';
export { d };
export * from './more.js';
