const he = require('he');
print(he.encode('foo © bar ≠ baz 𝌆 qux') + ' ' + he.decode('&lt;&amp;&copy;&#x1D306;') + ' ' + he.escape('<a href="x">'));
