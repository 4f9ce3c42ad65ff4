const moment = require('moment');
const m = moment.utc('2020-02-29T10:00:00Z');
print(m.clone().add(1, 'year').format('YYYY-MM-DD dddd HH:mm') + ' ' + m.isLeapYear() + ' ' + m.week());
print(moment.duration(90, 'minutes').humanize() + ' ' + moment.utc([2020, 0, 31]).add(1, 'month').format('L'));
