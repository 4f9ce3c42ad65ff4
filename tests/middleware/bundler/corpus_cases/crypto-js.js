// Its browser map turns require('crypto') into an empty module.
const CryptoJS = require('crypto-js');
print(CryptoJS.SHA256('abc').toString() + ' ' + CryptoJS.MD5('abc').toString());
print(CryptoJS.HmacSHA1('m', 'k').toString(CryptoJS.enc.Base64) + ' ' + CryptoJS.enc.Hex.parse('6869').toString(CryptoJS.enc.Utf8));
