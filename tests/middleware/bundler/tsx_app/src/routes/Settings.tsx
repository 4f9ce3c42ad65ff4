import { useMemo } from 'react';
import { format } from '@/util/format';

export function Settings({ title }: { title: string }) {
  const items = useMemo(() => ['theme', 'language'].map((k) => format(k)), []);
  return (
    <section className="settings">
      <h2>{title}</h2>
      <ul>{items.map((i) => <li key={i}>{i}</li>)}</ul>
    </section>
  );
}
