import { of, from, map, filter, scan, take, mergeMap, Subject, BehaviorSubject } from 'rxjs';
const out = [];
of(1, 2, 3, 4, 5).pipe(filter((x) => x % 2), map((x) => x * 10), scan((a, b) => a + b, 0)).subscribe((v) => out.push(v));
from([1, 2]).pipe(mergeMap((x) => of(x, x + 100)), take(3)).subscribe((v) => out.push(v));
const s = new Subject(); const b = new BehaviorSubject('init');
s.subscribe((v) => out.push('s' + v)); b.subscribe((v) => out.push(v)); s.next(1); b.next('x');
print(out.join(','));
