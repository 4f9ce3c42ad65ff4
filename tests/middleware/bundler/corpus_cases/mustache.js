import Mustache from 'mustache';
print(Mustache.render('{{#xs}}<{{.}}>{{/xs}} {{&raw}} {{esc}}', { xs: [1, 2], raw: '<b>', esc: '<i>' }));
