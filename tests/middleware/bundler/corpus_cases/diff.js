import { diffWords, createPatch, diffLines } from 'diff';
print(diffWords('the quick fox', 'the slow fox').map((p) => (p.added ? '+' : p.removed ? '-' : '=') + p.value).join('|'));
print(createPatch('f.txt', 'a\nb\nc\n', 'a\nB\nc\n', 'old', 'new').replace(/\n/g, '|'));
print(diffLines('x\ny\n', 'x\nz\n').length);
