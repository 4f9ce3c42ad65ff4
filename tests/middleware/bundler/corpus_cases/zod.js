import { z } from 'zod';
const S = z.object({ name: z.string().min(2), age: z.number().int().positive().optional(), tags: z.array(z.enum(['a', 'b'])) });
print(JSON.stringify(S.parse({ name: 'ok', tags: ['a'] })));
const r = S.safeParse({ name: 'x', age: -1, tags: ['c'] });
print(r.success + ' ' + r.error.issues.map((i) => i.path.join('.') + ':' + i.code).join(','));
