import clsx from 'clsx';
print(clsx('a', { b: true, c: 0 }, ['d', ['e']], null, 1));
