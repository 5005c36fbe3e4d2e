import type { Effect, MetricVerdict } from '../records.ts';
import { forestScale, placeInterval } from './forest-scale.ts';
import { formatPercent, intervalWords } from './results-reading.ts';

export interface ForestRow {
  variant: string;
  /** The relative effect against the control, with the interval the verdict reads; null: none could be estimated. */
  relative: Effect | null;
  verdict: MetricVerdict | undefined;
}

const WIDTH = 560;
const LEFT = 130;
const RIGHT = WIDTH - 24;
const ROW_HEIGHT = 34;
const TOP = 12;
const ARROW = 7;

/**
 * A forest plot of one metric: each treatment's relative lift (a point) with its interval (a
 * line) against the zero line (no change). An unbounded side of an interval runs to the edge and
 * ends in an arrow; the figure's text says the same for readers who do not see the picture.
 */
export function ForestPlot(props: {
  rows: ForestRow[];
  labelledBy: string;
  describedBy?: string;
  /** How the intervals are named in each row's title ("always-valid interval"). */
  intervalName?: string;
  /** A guardrail's relative margin on the harmful side (−0.02 for a 2 % margin of a higher-is-better metric): a dashed line, inside the scale. */
  margin?: number;
}) {
  const { rows, labelledBy, describedBy, intervalName = 'interval', margin } = props;
  const estimated = rows.flatMap((row) => (row.relative ? [{ estimate: row.relative.estimate, low: row.relative.ci_low, high: row.relative.ci_high }] : []));
  const scale = forestScale(margin === undefined ? estimated : [...estimated, { estimate: margin, low: null, high: null }], LEFT, RIGHT);
  const height = TOP + rows.length * ROW_HEIGHT + 28;
  const axisY = TOP + rows.length * ROW_HEIGHT;
  return (
    <svg class="forest" role="img" aria-labelledby={labelledBy} aria-describedby={describedBy} viewBox={`0 0 ${WIDTH} ${height}`} width="100%" style={{ maxWidth: `${WIDTH}px` }}>
      {scale.ticks.map((tick) => (
        <g>
          <line x1={scale.x(tick)} x2={scale.x(tick)} y1={TOP - 6} y2={axisY} class={tick === 0 ? 'zero' : 'grid'} />
          <text x={scale.x(tick)} y={axisY + 16} class="tick" text-anchor="middle">
            {tick === 0 ? '0' : formatPercent(tick)}
          </text>
        </g>
      ))}
      {!scale.ticks.includes(0) && <line x1={scale.x(0)} x2={scale.x(0)} y1={TOP - 6} y2={axisY} class="zero" />}
      <line x1={LEFT} x2={RIGHT} y1={axisY} y2={axisY} class="axis" />
      {margin !== undefined && (
        <g>
          <line x1={scale.x(margin)} x2={scale.x(margin)} y1={TOP - 6} y2={axisY} class="margin" />
          <text x={scale.x(margin)} y={TOP - 2} class="tick" text-anchor={margin < 0 ? 'end' : 'start'} dx={margin < 0 ? -3 : 3}>
            margin
          </text>
        </g>
      )}
      {rows.map((row, i) => {
        const y = TOP + i * ROW_HEIGHT + ROW_HEIGHT / 2;
        const verdictClass = `verdict-${row.verdict ?? 'none'}`;
        if (!row.relative) {
          return (
            <g>
              <text x={0} y={y + 4} class="label">
                {row.variant}
              </text>
              <text x={LEFT} y={y + 4} class="label muted-text">
                no estimate
              </text>
            </g>
          );
        }
        const place = placeInterval(scale, { estimate: row.relative.estimate, low: row.relative.ci_low, high: row.relative.ci_high });
        return (
          <g class={verdictClass}>
            <title>{`${row.variant}: ${formatPercent(row.relative.estimate)} (${intervalName} ${intervalWords(row.relative)})`}</title>
            <text x={0} y={y + 4} class="label">
              {row.variant}
            </text>
            <line x1={place.from} x2={place.to} y1={y} y2={y} class="interval" />
            {place.openLow ? (
              <polygon class="arrow" data-open="low" points={`${place.from},${y} ${place.from + ARROW},${y - ARROW / 1.5} ${place.from + ARROW},${y + ARROW / 1.5}`} />
            ) : (
              <line x1={place.from} x2={place.from} y1={y - 6} y2={y + 6} class="interval" />
            )}
            {place.openHigh ? (
              <polygon class="arrow" data-open="high" points={`${place.to},${y} ${place.to - ARROW},${y - ARROW / 1.5} ${place.to - ARROW},${y + ARROW / 1.5}`} />
            ) : (
              <line x1={place.to} x2={place.to} y1={y - 6} y2={y + 6} class="interval" />
            )}
            <rect x={place.at - 5} y={y - 5} width={10} height={10} class="estimate" transform={`rotate(45 ${place.at} ${y})`} />
          </g>
        );
      })}
    </svg>
  );
}
