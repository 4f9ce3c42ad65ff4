export let count = 0;
export function increment() {
  count++;
  return this;
}
export { count as alias };
