import { DateTime, Duration, Interval } from 'luxon';
const d = DateTime.fromISO('2020-02-29T10:00:00', { zone: 'utc' });
print(d.plus({ years: 1 }).toISODate() + ' ' + d.toFormat('cccc, LLL d') + ' ' + d.weekNumber);
print(Duration.fromObject({ minutes: 135 }).shiftTo('hours', 'minutes').toHuman() + ' ' + Interval.fromDateTimes(d, d.plus({ days: 3 })).length('hours'));
