import type { Results } from '../records.ts';

/** z for a two-sided 95 % interval: the chart's per-variant intervals use the normal approximation. */
const Z_95 = 1.959964;

interface Row {
  variant: string;
  mean: number;
  low: number;
  high: number;
  lift: number | undefined;
  pValue: number | undefined;
}

/**
 * One metric's results as an SVG chart: each variant's mean with its 95 % confidence interval
 * (mean ± 1.96 standard errors), and beside it the lift and p-value against the control that the
 * server computed (Welch's t-test). Also a table, so the numbers are readable without the chart.
 */
export function MetricChart({ metric, results }: { metric: string; results: Results }) {
  const rows: Row[] = results.variant_results.map((v, i) => {
    const stats = v.metric_stats[metric];
    const mean = stats?.mean ?? v.metric_values[metric] ?? 0;
    const n = v.participant_count;
    const halfWidth = stats && n > 1 ? Z_95 * Math.sqrt(stats.variance / n) : 0;
    return { variant: v.variant_key, mean, low: mean - halfWidth, high: mean + halfWidth, lift: i === 0 ? undefined : (stats?.lift ?? undefined), pValue: i === 0 ? undefined : (stats?.p_value ?? undefined) };
  });
  const min = Math.min(0, ...rows.map((r) => r.low));
  const max = Math.max(...rows.map((r) => r.high), min + 1e-9);
  const width = 480;
  const left = 110;
  const rowHeight = 36;
  const x = (value: number) => left + ((value - min) / (max - min)) * (width - left - 20);
  const height = rows.length * rowHeight + 30;
  const titleId = `chart-${metric}`;
  return (
    <figure class="chart">
      <figcaption id={titleId}>
        <strong>{metric}</strong>: mean per participant with 95 % confidence interval
      </figcaption>
      <svg role="img" aria-labelledby={titleId} viewBox={`0 0 ${width} ${height}`} width="100%" style={{ maxWidth: `${width}px` }}>
        <line x1={x(0)} x2={x(0)} y1={0} y2={height - 24} class="axis" />
        {rows.map((row, i) => {
          const y = i * rowHeight + 20;
          return (
            <g>
              <text x={0} y={y + 4} class="label">
                {row.variant}
              </text>
              <line x1={x(row.low)} x2={x(row.high)} y1={y} y2={y} class="interval" />
              <line x1={x(row.low)} x2={x(row.low)} y1={y - 6} y2={y + 6} class="interval" />
              <line x1={x(row.high)} x2={x(row.high)} y1={y - 6} y2={y + 6} class="interval" />
              <circle cx={x(row.mean)} cy={y} r={5} class={i === 0 ? 'control' : 'mean'} />
            </g>
          );
        })}
        <text x={x(min)} y={height - 6} class="tick">
          {min.toPrecision(3)}
        </text>
        <text x={x(max)} y={height - 6} class="tick" text-anchor="end">
          {max.toPrecision(3)}
        </text>
      </svg>
      <table class="list compact">
        <thead>
          <tr>
            <th scope="col">Variant</th>
            <th scope="col">Mean</th>
            <th scope="col">95 % CI</th>
            <th scope="col">Lift vs control</th>
            <th scope="col">p-value</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr>
              <td>{row.variant}</td>
              <td>{row.mean.toPrecision(4)}</td>
              <td>
                {row.low.toPrecision(4)} – {row.high.toPrecision(4)}
              </td>
              <td>{row.lift === undefined ? '—' : `${(row.lift * 100).toFixed(1)} %`}</td>
              <td>{row.pValue === undefined ? '—' : row.pValue.toPrecision(3)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </figure>
  );
}
