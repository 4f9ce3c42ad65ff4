import * as yaml from 'js-yaml';
const doc = yaml.load('a: 1\nb: [x, y]\nc:\n  d: true\n  e: 2020-01-01\n');
print(JSON.stringify(doc) + ' ' + yaml.dump({ k: ['v', { w: null }] }).replace(/\n/g, '|'));
