export { a as more } from './a.js';
export const m = 'm';
