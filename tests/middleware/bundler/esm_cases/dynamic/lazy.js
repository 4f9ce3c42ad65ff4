print('lazy evaluated');
export const x = 'lazy x';
export default 2;
