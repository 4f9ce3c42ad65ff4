exports.a = 'A';
exports.f = function () { return 'F ' + (this === undefined); };
