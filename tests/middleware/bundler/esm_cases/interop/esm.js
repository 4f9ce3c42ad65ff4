export default 'esm default';
export const x = 'esm x';
