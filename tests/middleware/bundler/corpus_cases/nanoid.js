// ESM-only, browser field and browser export condition.
import { nanoid, customAlphabet, urlAlphabet } from 'nanoid';
const id = nanoid();
print(id.length + ' ' + /^[A-Za-z0-9_-]+$/.test(id));
const a = customAlphabet('ab', 10)();
print(a.length + ' ' + /^[ab]+$/.test(a) + ' ' + urlAlphabet.length);
