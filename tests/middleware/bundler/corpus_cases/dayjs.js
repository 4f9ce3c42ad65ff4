const dayjs = require('dayjs');
const utc = require('dayjs/plugin/utc');
const rel = require('dayjs/plugin/relativeTime');
dayjs.extend(utc); dayjs.extend(rel);
const d = dayjs.utc('2020-02-29T10:00:00Z');
print(d.add(1, 'year').format('YYYY-MM-DD HH:mm dddd'));
print(d.from(dayjs.utc('2020-05-01T00:00:00Z')));
print(d.isBefore('2021-01-01') + ' ' + d.daysInMonth());
