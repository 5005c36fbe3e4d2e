import type { ChartData } from './insights-reading.ts';
import { countScale, linePoints, pointsAttribute, variantLabel } from './insights-reading.ts';

const WIDTH = 640;
const HEIGHT = 240;
const BOX = { left: 48, right: WIDTH - 16, top: 12, bottom: HEIGHT - 32 };
/** Each variant's line differs in colour and in dash pattern, so the legend is readable without colour. */
const STROKES = ['#0b57d0', '#b3261e', '#146c2e', '#8a4b00', '#6a1b9a', '#00695c', '#555555'];
const DASHES = ['', '6 3', '2 3', '8 3 2 3', '1 2', '10 4', '4 4'];
export const lineStyle = (i: number) => ({ stroke: STROKES[i % STROKES.length]!, dash: DASHES[i % DASHES.length]! });

/**
 * Evaluation counts over time as an SVG chart: one line per variant (colour and dash pattern),
 * hours or UTC days along the bottom, counts up the side. The legend and the totals table beside
 * it say the same in words.
 */
export function EvaluationChart({ data, granularity, labelledBy }: { data: ChartData; granularity: 'hour' | 'day'; labelledBy: string }) {
  const scale = countScale(data.max);
  const y = (count: number) => BOX.bottom - (count / scale.top) * (BOX.bottom - BOX.top);
  const n = data.slots.length;
  const x = (i: number) => (n <= 1 ? BOX.left : BOX.left + (i / (n - 1)) * (BOX.right - BOX.left));
  const label = (ms: number) =>
    granularity === 'hour'
      ? new Date(ms).toLocaleString(undefined, { day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit' })
      : new Date(ms).toLocaleDateString(undefined, { day: 'numeric', month: 'short', timeZone: 'UTC' });
  const xTicks = n === 0 ? [] : [...new Set([0, Math.floor((n - 1) / 2), n - 1])];
  return (
    <svg class="evaluations" role="img" aria-labelledby={labelledBy} viewBox={`0 0 ${WIDTH} ${HEIGHT}`} width="100%" style={{ maxWidth: `${WIDTH}px` }}>
      {scale.ticks.map((tick) => (
        <g>
          <line x1={BOX.left} x2={BOX.right} y1={y(tick)} y2={y(tick)} class={tick === 0 ? 'axis' : 'grid'} />
          <text x={BOX.left - 6} y={y(tick) + 4} class="tick" text-anchor="end">
            {tick}
          </text>
        </g>
      ))}
      {xTicks.map((i) => (
        <text x={x(i)} y={HEIGHT - 10} class="tick" text-anchor={i === 0 ? 'start' : i === n - 1 ? 'end' : 'middle'}>
          {label(data.slots[i]!)}
        </text>
      ))}
      {data.lines.map((line, i) => {
        const style = lineStyle(i);
        return (
          <polyline class="series" data-variant={line.variant} data-total={line.total} points={pointsAttribute(linePoints(line.counts, scale.top, BOX))} fill="none" stroke={style.stroke} stroke-width={2} stroke-dasharray={style.dash || undefined}>
            <title>{`${variantLabel(line.variant)}: ${line.total} evaluation${line.total === 1 ? '' : 's'}`}</title>
          </polyline>
        );
      })}
    </svg>
  );
}

/** A short sample of a line's style for the legend. */
export function LineSwatch({ index }: { index: number }) {
  const style = lineStyle(index);
  return (
    <svg width="28" height="10" aria-hidden="true" class="swatch">
      <line x1={0} x2={28} y1={5} y2={5} stroke={style.stroke} stroke-width={2} stroke-dasharray={style.dash || undefined} />
    </svg>
  );
}
