const { sprintf, vsprintf } = require('sprintf-js');
print(sprintf('%05.2f|%-4s|%x|%j|%2$s', 3.14159, 'ab', 255, { a: 1 }) + ' ' + vsprintf('%s-%s', ['x', 'y']));
