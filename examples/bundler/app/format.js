// Joins lines; the regex and template literal are here to keep the dependency scanner honest.
var blank = /^\s*$/;
exports.lines = function (list) {
  return list.filter(function (l) { return !blank.test(l); }).map(function (l, i) { return `${i + 1}. ${l}`; }).join('\n');
};
