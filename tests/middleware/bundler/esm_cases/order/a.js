import './shared.js';
print('a');
