import { __assign, __rest, __spreadArray, __awaiter } from 'tslib';
print(JSON.stringify(__assign({ a: 1 }, { b: 2 })) + ' ' + JSON.stringify(__rest({ a: 1, b: 2, c: 3 }, ['a'])) + ' ' + __spreadArray([1], [2, 3], false));
globalThis.__wait = __awaiter(undefined, undefined, undefined, function* () { const x = yield Promise.resolve(5); return x + 1; }).then((v) => print(v));
