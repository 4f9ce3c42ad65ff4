import { format, addDays, differenceInCalendarDays, parseISO, formatDistanceStrict, startOfWeek } from 'date-fns';
const d = new Date(2021, 1, 27, 13, 5);
print(format(addDays(d, 3), "yyyy-MM-dd'T'HH:mm EEEE"));
print(differenceInCalendarDays(parseISO('2024-03-01'), parseISO('2024-02-01')));
print(formatDistanceStrict(new Date(2020, 0, 1), new Date(2020, 0, 11)));
print(format(startOfWeek(d), 'PPPP'));
