// browser: { buffer: false, crypto: false }.
const nacl = require('tweetnacl');
const kp = nacl.sign.keyPair.fromSeed(new Uint8Array(32).fill(7));
const sig = nacl.sign.detached(new TextEncoder().encode('msg'), kp.secretKey);
const hex = (a) => Array.from(a, (x) => x.toString(16).padStart(2, '0')).join('');
print(hex(kp.publicKey) + ' ' + hex(sig).slice(0, 32) + ' ' + nacl.sign.detached.verify(new TextEncoder().encode('msg'), sig, kp.publicKey));
print(hex(nacl.hash(new Uint8Array([1, 2, 3]))).slice(0, 32));
