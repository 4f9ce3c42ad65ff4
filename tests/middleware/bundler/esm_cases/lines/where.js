export function where() {
  return (/\.js:(\d+):\d+/.exec(new Error().stack.split('\n').find((l) => /\.js:\d+/.test(l))) || [])[1];
}

export const thrower = () => {
  throw new Error('here, line 6');
};
