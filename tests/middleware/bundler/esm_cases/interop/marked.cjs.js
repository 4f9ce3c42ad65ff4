Object.defineProperty(exports, '__esModule', { value: true });
exports.default = 'the default export';
exports.named = 'named';
