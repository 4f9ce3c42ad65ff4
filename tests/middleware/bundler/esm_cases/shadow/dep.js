export const x = 'X';
export function f() { return 'F'; }
