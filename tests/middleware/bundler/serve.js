'use strict';
// Starts csgi-bundle-serve (or another csgi server printing "listening on URL") and resolves with
// { proc, url } once it listens; rejects when it exits first or does not listen within 15 s.
const { spawn } = require('child_process');

function startServer(tool, argv, options = {}) {
  return new Promise((resolve, reject) => {
    const p = spawn(tool, argv, { stdio: ['ignore', 'pipe', 'inherit'], ...options });
    let out = '';
    const timer = setTimeout(() => reject(new Error('server did not start: ' + out)), 15000);
    p.stdout.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/[^\s]+)/.exec(out);
      if (m) { clearTimeout(timer); resolve({ proc: p, url: m[1].replace(/\/$/, '') }); }
    });
    p.on('exit', (c) => reject(new Error('server exited ' + c + ': ' + out)));
  });
}

module.exports = { startServer };
