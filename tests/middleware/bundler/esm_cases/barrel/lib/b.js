let n = 0;
export default function b() { return 'b' + n; }
export function bump() { n++; }
