export default { v: 1 };
export const extra = 'extra';
