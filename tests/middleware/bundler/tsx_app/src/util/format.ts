export const format = (k: string): string => `${k.toUpperCase()} (${k.length})`;
