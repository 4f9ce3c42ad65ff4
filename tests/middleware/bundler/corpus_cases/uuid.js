import { v4, v5, validate, version, parse, stringify, NIL } from 'uuid';
print(v5('hello', v5.URL) + ' ' + validate(v4()) + ' ' + version(v4()));
print(stringify(parse('6ec0bd7f-11c0-43da-975e-2a8ad9ebae0b')) + ' ' + NIL);
