import * as pako from 'pako';
const input = new TextEncoder().encode('hello hello hello hello pako');
const z = pako.deflate(input);
print(Array.from(z).join(',') + ' ' + new TextDecoder().decode(pako.inflate(z)) + ' ' + pako.gzip('x').length);
