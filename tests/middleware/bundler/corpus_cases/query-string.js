import queryString from 'query-string';
print(JSON.stringify(queryString.parse('?foo=bar&n=1&n=2', { parseNumbers: true })) + ' ' + queryString.stringify({ b: 2, a: [1, 'x y'] }));
print(queryString.stringifyUrl({ url: 'https://x.test/p', query: { q: 'é' } }));
