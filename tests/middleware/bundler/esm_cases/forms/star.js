export const fromStar = 'from star';
export default 'not re-exported';
