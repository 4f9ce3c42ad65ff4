import { useState } from 'react';

type CounterProps = { start: number };

export const Counter = ({ start }: CounterProps) => {
  const [n, setN] = useState<number>(start);
  return <p className="counter" onClick={() => setN(n + 1)}>count: {n * 10}</p>;
};
