export { one as c } from './lib.js';
export * as sub from './value.js';
export * from './star.js';
export const own = 'own';
