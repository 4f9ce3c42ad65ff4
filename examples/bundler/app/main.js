// The page's entry module: a few ramda functions by path, and local modules.
var map = require('ramda/src/map');
var pipe = require('ramda/src/pipe');
var format = require('./format');
var data = require('./data.json');

exports.render = function (el) {
  var doubled = map(function (x) { return x * 2; }, data.numbers);
  var shout = pipe(function (s) { return s.toUpperCase(); }, function (s) { return s + '!'; });
  el.textContent = format.lines([
    'doubled: ' + doubled.join(','),
    'greeting: ' + shout(data.greeting),
  ]);
};

// Loaded on demand: a two-argument require is not bundled with this module; it asks the server for
// ./stats and whatever it needs that the page does not have yet.
exports.loadStats = function (cb) {
  require('./stats', function (err, stats) {
    if (err) return cb(err);
    cb(null, stats.summary(data.numbers));
  });
};
