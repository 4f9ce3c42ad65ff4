const m = require('./esm.js');
module.exports = JSON.stringify({ esModule: m.__esModule, keys: Object.keys(m).sort(), def: m.default, x: m.x });
