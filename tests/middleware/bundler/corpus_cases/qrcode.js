// browser: { "./lib/index.js": "./lib/browser.js", fs: false }.
const QRCode = require('qrcode');
globalThis.__wait = QRCode.toString('csgi', { type: 'svg', errorCorrectionLevel: 'M' }).then((svg) => {
  print(svg.length + ' ' + svg.slice(0, 120));
  print(QRCode.create('hello').modules.size);
});
