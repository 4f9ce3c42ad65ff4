export const c = 'c';
export const c2 = 'c2';
