const $ = require('jquery');
const root = $('<div><p class="a">one</p><p>two</p></div>');
root.find('p').addClass('b').last().text('TWO');
print(root.html() + ' ' + root.find('.a.b').length + ' ' + $.fn.jquery);
print(JSON.stringify($.extend(true, {}, { a: { b: 1 } }, { a: { c: 2 } })) + ' ' + $.param({ x: [1, 2], y: 'z w' }));
