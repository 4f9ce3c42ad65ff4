// uuid 9.0.1's dist/esm-browser (copied here from the corpus by esm_check.js): npm code no one here wrote.
import { v1, v3, v4, v5, NIL, validate, version, parse, stringify } from './esm-browser/index.js';
import * as uuid from './esm-browser/index.js';
print(Object.keys(uuid).join(','));
print(v5('hello', v5.URL) + ' ' + v3('hello', v3.DNS));
print(validate(v4()) + ' ' + version(v4()) + ' ' + version(v1()) + ' ' + NIL);
print(stringify(parse('6ec0bd7f-11c0-43da-975e-2a8ad9ebae0b')));
