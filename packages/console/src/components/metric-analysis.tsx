import type { AnalysisWire, MetricVerdict, MetricWire, Results } from '../records.ts';
import { DAY_MS, DEFAULT_LOOKBACK_DAYS } from './experiment-setup.ts';
import { ForestPlot, type ForestRow } from './forest-plot.tsx';
import { cappingChange, confidenceWords, correctionIsOn, CORRECTION_WORDS, formatNumber, formatP, formatPercent, intervalWords, VERDICT_WORDS } from './results-reading.ts';

const DEFAULT_LOOKBACK_MS = Number(DEFAULT_LOOKBACK_DAYS) * DAY_MS;

/** A verdict as a labelled badge: its colour and its word (the word alone carries the meaning). */
export function VerdictBadge({ verdict }: { verdict: MetricVerdict | null | undefined }) {
  if (!verdict) return <span class="muted">—</span>;
  return <span class={`badge verdict-${verdict}`}>{VERDICT_WORDS[verdict]}</span>;
}

export interface MetricAnalysisProps {
  metric: string;
  /** The metric's definition, when the experiment has it (what CUPED and capping were asked). */
  definition: MetricWire | undefined;
  results: Results;
  control: string;
  analysis: AnalysisWire | undefined;
  /** Unique on the page: names the figure's elements. */
  index: number;
}

/**
 * One metric's analysed results: a forest plot of each treatment's relative lift, the verdicts as
 * badges, CUPED's state, what capping changed, and a table with every number.
 */
export function MetricAnalysis({ metric, definition, results, control, analysis, index }: MetricAnalysisProps) {
  const captionId = `metric-${index}-caption`;
  const summaryId = `metric-${index}-summary`;
  const confidence = confidenceWords(analysis);
  const corrected = correctionIsOn(analysis);
  const treatments = results.variant_results.filter((v) => v.variant_key !== control);
  const rows: ForestRow[] = treatments.map((v) => {
    const stats = v.metric_stats[metric];
    return { variant: v.variant_key, relative: stats?.relative ?? null, verdict: stats?.verdict ?? undefined };
  });
  const cuped = treatments.flatMap((v) => {
    const c = v.metric_stats[metric]?.cuped;
    return c ? [{ variant: v.variant_key, reduction: c.variance_reduction }] : [];
  });
  const capped = results.variant_results.flatMap((v) => {
    const change = cappingChange(v.metric_stats[metric]);
    return change ? [{ variant: v.variant_key, ...change }] : [];
  });
  // Asked for by the definition; applied where a treatment's stats carry its adjustment.
  const lookback = definition?.cuped ? (definition.cuped.lookback_ms ?? DEFAULT_LOOKBACK_MS) : undefined;
  return (
    <figure class="chart" aria-labelledby={captionId}>
      <figcaption id={captionId}>
        <strong>{metric}</strong>: relative lift against {control} with {confidence} confidence intervals
        {definition?.direction === 'decrease' ? ' (lower is better)' : ''}
      </figcaption>
      <ul class="verdicts" id={summaryId}>
        {treatments.map((v, i) => {
          const relative = rows[i]!.relative;
          return (
            <li>
              {v.variant_key}: <VerdictBadge verdict={rows[i]!.verdict} />{' '}
              {relative ? `${formatPercent(relative.estimate)}, interval ${intervalWords(relative)}` : 'no estimate yet'}
            </li>
          );
        })}
      </ul>
      <ForestPlot rows={rows} labelledBy={captionId} describedBy={summaryId} />
      <p class="muted">
        CUPED: {cuped.length > 0 || lookback ? 'on' : 'off'}
        {typeof lookback === 'number' ? ` (lookback ${Number((lookback / DAY_MS).toFixed(2))} days)` : ''}
        {lookback && cuped.length === 0 ? ', not applied to these results' : ''}
        {cuped.map((c) => (typeof c.reduction === 'number' ? ` · variance reduced by ${(c.reduction * 100).toFixed(1)} % for ${c.variant}` : '')).join('')}
        {corrected && analysis ? ` · p-values adjusted (${CORRECTION_WORDS[analysis.correction]})` : ''}
      </p>
      {capped.length > 0 && (
        <p class="muted">
          Capping changed the mean:{' '}
          {capped.map((c) => `${c.variant} ${formatNumber(c.capped)} (uncapped ${formatNumber(c.uncapped)})`).join('; ')}
        </p>
      )}
      <table class="list compact" aria-label={`Results of ${metric}`}>
        <thead>
          <tr>
            <th scope="col">Variant</th>
            <th scope="col">Mean</th>
            <th scope="col">Relative lift</th>
            <th scope="col">{confidence} interval</th>
            <th scope="col">Absolute difference</th>
            <th scope="col">p-value</th>
            {corrected && <th scope="col">Adjusted p-value</th>}
            <th scope="col">Verdict</th>
          </tr>
        </thead>
        <tbody>
          {results.variant_results.map((v) => {
            const stats = v.metric_stats[metric];
            const isControl = v.variant_key === control;
            const relative = stats?.relative;
            return (
              <tr>
                <td>
                  {v.variant_key}
                  {isControl ? ' (control)' : ''}
                </td>
                <td>{formatNumber(stats?.mean ?? v.metric_values[metric])}</td>
                <td>{relative ? formatPercent(relative.estimate) : '—'}</td>
                <td>{relative ? intervalWords(relative) : '—'}</td>
                <td>{stats?.absolute ? formatNumber(stats.absolute.estimate) : '—'}</td>
                <td>{formatP(relative?.p_value)}</td>
                {corrected && <td>{formatP(stats?.adjusted_p_value)}</td>}
                <td>{isControl ? '—' : <VerdictBadge verdict={stats?.verdict} />}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </figure>
  );
}
