'use strict';
// Talks to `csgi-bundle --stdio ROOT` (the bundler middleware in-process): one request per line, answers
// framed as "<status> <body bytes> <header count>\n" + header lines + body. Shared by the Node checks.
const { spawn } = require('child_process');

class BundleServer {
  constructor(tool, root, extraArgs = []) {
    this.proc = spawn(tool, [...extraArgs, '--stdio', root], { stdio: ['pipe', 'pipe', 'inherit'] });
    this.buf = Buffer.alloc(0);
    this.waiting = [];
    this.proc.stdout.on('data', (d) => { this.buf = Buffer.concat([this.buf, d]); this.pump(); });
    this.proc.on('exit', (code) => {
      for (const w of this.waiting) w.reject(new Error('csgi-bundle exited with ' + code));
      this.waiting = [];
    });
  }
  pump() {
    while (this.waiting.length) {
      const nl = this.buf.indexOf(10);
      if (nl < 0) return;
      const [status, len, count] = this.buf.subarray(0, nl).toString().split(' ').map(Number);
      let pos = nl + 1;
      const headers = {};
      let ok = true;
      for (let i = 0; i < count; i++) {
        const e = this.buf.indexOf(10, pos);
        if (e < 0) { ok = false; break; }
        const line = this.buf.subarray(pos, e).toString();
        const c = line.indexOf(': ');
        headers[line.slice(0, c).toLowerCase()] = line.slice(c + 2);
        pos = e + 1;
      }
      if (!ok || this.buf.length < pos + len) return;
      const body = this.buf.subarray(pos, pos + len);
      this.buf = this.buf.subarray(pos + len);
      this.waiting.shift().resolve({ status, headers, body: body.toString('utf8'), bytes: len });
    }
  }
  request(target, ifNoneMatch) {
    if (/[\t\n]/.test(target)) throw new Error('bad target');
    return new Promise((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      this.proc.stdin.write(target + (ifNoneMatch ? '\t' + ifNoneMatch : '') + '\n');
    });
  }
  close() { this.proc.stdin.end(); }
}

// The module paths of a bundle response (one module per line: [id,"path",...).
function bundlePaths(body) {
  const out = [];
  for (const line of body.split('\n')) {
    const m = /^\[(\d+),"([^"]*)",/.exec(line);
    if (m) out.push(m[2]);
  }
  return out;
}

module.exports = { BundleServer, bundlePaths };
