// Needs the whole of ramda: the page already holds map and pipe (and their helpers), so only the rest
// comes in the second response.
var R = require('ramda');
var format = require('./format');
exports.summary = function (numbers) {
  return format.lines([
    'sum: ' + R.sum(numbers),
    'mean: ' + R.mean(numbers),
    'median: ' + R.median(numbers),
  ]);
};
