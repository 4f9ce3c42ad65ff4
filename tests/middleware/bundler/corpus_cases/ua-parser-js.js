import { UAParser } from 'ua-parser-js';
const r = new UAParser('Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36').getResult();
print(r.browser.name + ' ' + r.browser.major + ' ' + r.os.name + ' ' + r.os.version + ' ' + r.engine.name + ' ' + r.cpu.architecture);
