import type { AnalysisWire, GuardrailStatus, MetricVerdict, MetricWire, Results, VariantResult } from '../records.ts';
import { DAY_MS, DEFAULT_LOOKBACK_DAYS } from './experiment-setup.ts';
import { ForestPlot, type ForestRow } from './forest-plot.tsx';
import {
  cappingChange,
  confidenceWords,
  correctionIsOn,
  CORRECTION_WORDS,
  engineOf,
  formatChance,
  formatNumber,
  formatP,
  formatPercent,
  formatRisk,
  GUARDRAIL_WORDS,
  guardrailMeaning,
  intervalKindOf,
  intervalWords,
  isSequential,
  leadEffect,
  marginOf,
  marginWords,
  quantileCountWords,
  quantileOf,
  quantileWords,
  statisticWords,
  VERDICT_WORDS,
  verdictReading,
} from './results-reading.ts';

const DEFAULT_LOOKBACK_MS = Number(DEFAULT_LOOKBACK_DAYS) * DAY_MS;

/** A verdict as a labelled badge: its colour and its word (the word alone carries the meaning). */
export function VerdictBadge({ verdict }: { verdict: MetricVerdict | null | undefined }) {
  if (!verdict) return <span class="muted">—</span>;
  return <span class={`badge verdict-${verdict}`}>{VERDICT_WORDS[verdict]}</span>;
}

/** A guardrail's status as a labelled badge: colour and word, the word alone carrying the meaning. */
export function GuardrailBadge({ status }: { status: GuardrailStatus | null | undefined }) {
  if (!status) return <span class="muted">—</span>;
  return <span class={`badge guardrail-${status}`}>{GUARDRAIL_WORDS[status]}</span>;
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
 * One metric's analysed results: a forest plot of each treatment's relative lift with the interval
 * the verdicts read (confidence, always-valid or credible), the verdicts as badges, a guardrail's
 * status, CUPED's state, what capping changed, a table with every number, and with sequential
 * testing, the Bayesian engine or a guardrail, a table of their readings. A quantile metric
 * (docs/statistics.md §15) says its quantile where a mean metric says "mean": "p90 of revenue per
 * participant", each arm's p90 with its order-statistic interval and count, "Difference of p90".
 */
export function MetricAnalysis({ metric, definition, results, control, analysis, index }: MetricAnalysisProps) {
  // A quantile metric (docs/statistics.md §15): arms are quantiles with their own intervals, effects compare them.
  const quantile = quantileOf(definition, results, metric);
  const words = statisticWords(quantile);
  const captionId = `metric-${index}-caption`;
  const summaryId = `metric-${index}-summary`;
  const confidence = confidenceWords(analysis);
  const corrected = correctionIsOn(analysis);
  const kind = intervalKindOf(analysis);
  const sequential = isSequential(analysis);
  const margin = marginOf(definition);
  // Results computed before guardrail tests carry no status (not even null): nothing to show then.
  const guarded = margin !== undefined && results.variant_results.some((v) => v.metric_stats[metric]?.guardrail_status !== undefined);
  const treatments = results.variant_results.filter((v) => v.variant_key !== control);
  const rows: ForestRow[] = treatments.map((v) => {
    const stats = v.metric_stats[metric];
    return { variant: v.variant_key, relative: leadEffect(stats, analysis), verdict: stats?.verdict ?? undefined };
  });
  const cuped = treatments.flatMap((v) => {
    const c = v.metric_stats[metric]?.cuped;
    return c ? [{ variant: v.variant_key, reduction: c.variance_reduction }] : [];
  });
  const capped = quantile ? [] : results.variant_results.flatMap((v) => {
    const change = cappingChange(v.metric_stats[metric]);
    return change ? [{ variant: v.variant_key, ...change }] : [];
  });
  // Asked for by the definition; applied where a treatment's stats carry its adjustment.
  const lookback = definition?.cuped ? (definition.cuped.lookback_ms ?? DEFAULT_LOOKBACK_MS) : undefined;
  return (
    <figure class="chart" aria-labelledby={captionId}>
      <figcaption id={captionId}>
        <strong>{metric}</strong>
        {quantile ? ` (${quantileWords(quantile, definition?.event_key ?? metric, definition?.aggregation)})` : ''}: {words.lift} against {control} with {confidence} {kind} intervals
        {definition?.direction === 'decrease' ? ' (lower is better)' : ''}
        {margin ? ` · guardrail with ${marginWords(margin)}${margin.margin > 0 ? ` on the ${margin.kind} effect` : ''}` : ''}
      </figcaption>
      <ul class="verdicts" id={summaryId}>
        {treatments.map((v, i) => {
          const stats = v.metric_stats[metric];
          return (
            <li>
              {v.variant_key}: <VerdictBadge verdict={rows[i]!.verdict} /> {verdictReading(stats, analysis, quantile)}
              {guarded && (
                <>
                  {' · guardrail '}
                  <GuardrailBadge status={stats?.guardrail_status} />
                  {stats?.guardrail_status ? ` ${guardrailMeaning(stats.guardrail_status, margin)}` : ' no test yet'}
                </>
              )}
            </li>
          );
        })}
      </ul>
      <ForestPlot
        rows={rows}
        labelledBy={captionId}
        describedBy={summaryId}
        intervalName={kind === 'confidence' ? 'interval' : `${kind} interval`}
        // A relative margin is on the plot's scale (the relative lift); harm is against the good direction.
        margin={margin && margin.kind === 'relative' && margin.margin > 0 ? (definition?.direction === 'decrease' ? margin.margin : -margin.margin) : undefined}
      />
      {quantile ? (
        <p class="muted">
          Each arm's {words.value} with its {confidence} order-statistic interval; the effects compare the {words.value}s (normal approximation). Not capped, no CUPED.
          {corrected && analysis ? ` · p-values adjusted (${CORRECTION_WORDS[analysis.correction]})` : ''}
        </p>
      ) : (
        <p class="muted">
          CUPED: {cuped.length > 0 || lookback ? 'on' : 'off'}
          {typeof lookback === 'number' ? ` (lookback ${Number((lookback / DAY_MS).toFixed(2))} days)` : ''}
          {lookback && cuped.length === 0 ? ', not applied to these results' : ''}
          {cuped.map((c) => (typeof c.reduction === 'number' ? ` · variance reduced by ${(c.reduction * 100).toFixed(1)} % for ${c.variant}` : '')).join('')}
          {corrected && analysis ? ` · p-values adjusted (${CORRECTION_WORDS[analysis.correction]})` : ''}
        </p>
      )}
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
            <th scope="col">{words.value}</th>
            {quantile && <th scope="col">{words.value}'s {confidence} interval</th>}
            {quantile && <th scope="col">Values</th>}
            <th scope="col">{words.relative}</th>
            <th scope="col">{confidence} interval</th>
            <th scope="col">{words.absolute}</th>
            <th scope="col">{sequential ? 'Fixed-horizon p-value' : 'p-value'}</th>
            {corrected && <th scope="col">Adjusted p-value</th>}
            <th scope="col">Verdict</th>
          </tr>
        </thead>
        <tbody>
          {results.variant_results.map((v) => {
            const stats = v.metric_stats[metric];
            const isControl = v.variant_key === control;
            const relative = stats?.relative;
            // A quantile arm without values has no quantile (null): its `mean` means nothing then.
            const q = stats?.quantile;
            return (
              <tr>
                <td>
                  {v.variant_key}
                  {isControl ? ' (control)' : ''}
                </td>
                <td>{quantile ? formatNumber(q?.estimate) : formatNumber(stats?.mean ?? v.metric_values[metric])}</td>
                {quantile && <td>{q ? intervalWords(q, (x) => formatNumber(x)) : '—'}</td>}
                {quantile && <td>{q ? quantileCountWords(q) : 'none'}</td>}
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
      {sequential && <SequentialTable metric={metric} treatments={treatments} confidence={confidence} corrected={corrected} relativeName={words.relative} />}
      {engineOf(analysis) === 'bayesian' && <BayesianTable metric={metric} treatments={treatments} confidence={confidence} />}
      {guarded && margin && <GuardrailTable metric={metric} treatments={treatments} relative={margin.kind === 'relative'} />}
    </figure>
  );
}

/** The running always-valid test of each treatment (docs/statistics.md §9–§10). */
function SequentialTable({ metric, treatments, confidence, corrected, relativeName }: { metric: string; treatments: VariantResult[]; confidence: string; corrected: boolean; relativeName: string }) {
  return (
    <table class="list compact" aria-label={`Always-valid test of ${metric}`}>
      <thead>
        <tr>
          <th scope="col">Variant</th>
          <th scope="col">{relativeName} (latest look)</th>
          <th scope="col">Always-valid {confidence} interval</th>
          <th scope="col">Always-valid p-value</th>
          {corrected && <th scope="col">Adjusted always-valid p-value</th>}
        </tr>
      </thead>
      <tbody>
        {treatments.map((v) => {
          const q = v.metric_stats[metric]?.sequential;
          return (
            <tr>
              <td>{v.variant_key}</td>
              <td>{q ? formatPercent(q.estimate) : '—'}</td>
              <td>{q ? intervalWords(q) : '—'}</td>
              <td>{formatP(q?.p_value)}</td>
              {corrected && <td>{formatP(q?.adjusted_p_value)}</td>}
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

/** The Bayesian posterior of each treatment's relative lift (§12): chance to win, credible interval, risks. */
function BayesianTable({ metric, treatments, confidence }: { metric: string; treatments: VariantResult[]; confidence: string }) {
  return (
    <table class="list compact" aria-label={`Bayesian reading of ${metric}`}>
      <thead>
        <tr>
          <th scope="col">Variant</th>
          <th scope="col">Chance to win</th>
          <th scope="col">{confidence} credible interval</th>
          <th scope="col">Risk of keeping the control (expected loss)</th>
          <th scope="col">Risk of shipping the variant (expected loss)</th>
        </tr>
      </thead>
      <tbody>
        {treatments.map((v) => {
          const b = v.metric_stats[metric]?.bayesian;
          return (
            <tr>
              <td>{v.variant_key}</td>
              <td>{formatChance(b?.chance_to_win)}</td>
              <td>{b ? intervalWords(b) : '—'}</td>
              <td>{formatRisk(b?.risk_control)}</td>
              <td>{formatRisk(b?.risk_treatment)}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

/** Each treatment's guardrail tests against the margin (§13); `relative`: the effect is a fraction. */
function GuardrailTable({ metric, treatments, relative }: { metric: string; treatments: VariantResult[]; relative: boolean }) {
  const effect = (value: number | null | undefined) => (typeof value === 'number' ? (relative ? formatPercent(value) : formatNumber(value)) : '—');
  return (
    <table class="list compact" aria-label={`Guardrail test of ${metric}`}>
      <thead>
        <tr>
          <th scope="col">Variant</th>
          <th scope="col">Status</th>
          <th scope="col">{relative ? 'Relative effect' : 'Absolute effect'}</th>
          <th scope="col">Bound on the harmful side</th>
          <th scope="col">p (harm beyond the margin)</th>
          <th scope="col">p (within the margin: non-inferiority)</th>
        </tr>
      </thead>
      <tbody>
        {treatments.map((v) => {
          const stats = v.metric_stats[metric];
          const g = stats?.guardrail;
          return (
            <tr>
              <td>{v.variant_key}</td>
              <td>
                <GuardrailBadge status={stats?.guardrail_status} />
              </td>
              <td>{effect(g?.estimate)}</td>
              <td>{g && g.bound === null ? 'none' : effect(g?.bound)}</td>
              <td>{formatP(g?.harm_p_value)}</td>
              <td>{formatP(g?.non_inferiority_p_value)}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}
