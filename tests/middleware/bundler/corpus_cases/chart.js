import { Chart, registerables } from 'chart.js';
Chart.register(...registerables);
const canvas = document.createElement('canvas');
canvas.width = 400; canvas.height = 200;
document.body.appendChild(canvas);
const c = new Chart(canvas, { type: 'bar', data: { labels: ['a', 'b', 'c'], datasets: [{ label: 'x', data: [3, 7, 5] }] },
  options: { animation: false, responsive: false } });
print(c.scales.y.ticks.map((t) => t.value).join(','));
print(c.scales.x.getLabels().join(',') + ' ' + Math.round(c.scales.y.getPixelForValue(5)));
print(Chart.version);
c.destroy();
