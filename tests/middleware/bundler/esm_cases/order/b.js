import './shared.js';
import './c.js';
print('b');
export const b = 'b value';
