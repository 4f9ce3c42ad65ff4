export const d = 'd';
