import YAML from 'yaml';
print(JSON.stringify(YAML.parse('a: 1\nb: [x, y]\n')) + ' ' + YAML.stringify({ k: ['v', { w: null }] }).replace(/\n/g, '|'));
const d = YAML.parseDocument('# c\nx: 1 # t\n'); print(String(d).replace(/\n/g, '|'));
