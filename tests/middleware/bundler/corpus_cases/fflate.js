import { deflateSync, inflateSync, strToU8, strFromU8, zipSync, unzipSync } from 'fflate';
const z = deflateSync(strToU8('fflate fflate fflate fflate'));
print(Array.from(z).join(',') + ' ' + strFromU8(inflateSync(z)));
const zip = zipSync({ 'a.txt': strToU8('A') }, { mtime: new Date(2020, 0, 1) });
print(zip.length + ' ' + Object.keys(unzipSync(zip)).join(','));
