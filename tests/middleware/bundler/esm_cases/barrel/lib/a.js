export let a = 1;
export function incA() { a++; }
