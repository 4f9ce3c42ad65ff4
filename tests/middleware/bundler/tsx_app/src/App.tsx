import { useEffect, useState } from 'react';
import { Counter } from '@/components/Counter';
import './app.css';

interface Props { initial: number }

export function App({ initial }: Props) {
  const [route, setRoute] = useState<JSX.Element | null>(null);
  const [ready, setReady] = useState(false);
  useEffect(() => setReady(true), []);
  const open = async () => {
    const { Settings } = await import('./routes/Settings');
    setRoute(<Settings title="Settings" />);
    (window as any).__routeDone = true;
  };
  return (
    <main className="app" data-ready={String(ready)}>
      <h1>TSX app</h1>
      <Counter start={initial} />
      <button id="open" onClick={open}>open settings</button>
      {route}
    </main>
  );
}
