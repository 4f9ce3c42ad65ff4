export default 'the default';
export const one = 1;
export let two = 2;
export var v = 'var';
export class Klass { k() { return 'k'; } }
export function fn() { return 'fn'; }
const q = 'q';
export { q as "quoted name" };
export const { dx, dy: [dz], ...drest } = { dx: 'dx', dy: ['dz'], r1: 1 };
