import type { Experiment, Results } from '../records.ts';
import { controlOf, metricKeyOf, metricsOfExperiment } from './experiment-setup.ts';
import { MetricAnalysis } from './metric-analysis.tsx';
import { MetricChart } from './metric-chart.tsx';
import { alphaOf, analysisOf, formatP, imbalances, isAnalysed, sequentialSrmWarns, srmWarns, verdictBasisWords } from './results-reading.ts';

/**
 * An experiment's latest results: the warnings (sample ratio mismatch, fixed or always-valid;
 * pre-exposure imbalance), the participants per variant with both SRM checks, then what the
 * verdicts read and each metric, guardrails apart. Results computed before
 * metric definitions keep the page they always had (a chart of the means per metric).
 */
export function ExperimentResults({ experiment, results }: { experiment: Experiment; results: Results }) {
  const analysed = isAnalysed(results);
  const analysis = analysisOf(results, experiment);
  const control = analysed ? controlOf(experiment) : results.variant_results[0]?.variant_key ?? '';
  const off = analysed ? imbalances(results, alphaOf(analysis)) : [];
  return (
    <>
      {(srmWarns(results) || sequentialSrmWarns(results, analysis)) && (
        <p class="error" role="alert">
          Sample ratio mismatch
          {srmWarns(results) && typeof results.srm_p_value === 'number' ? ` (p = ${formatP(results.srm_p_value)})` : ''}
          {sequentialSrmWarns(results, analysis) ? ` (always-valid p = ${formatP(results.sequential_srm_p_value)})` : ''}: the participants are not split as planned. Check the flag's
          targeting and exposures before trusting these results.
        </p>
      )}
      {off.length > 0 && (
        <div class="warning" role="alert">
          Pre-exposure imbalance: before the experiment, these treatments already differed from the control (CUPED's balance check, p below {alphaOf(analysis)}). Their
          participants may not be comparable; check the assignment.
          <ul>
            {off.map((o) => (
              <li>
                {o.metric}, {o.variant}: p = {formatP(o.pValue)}
              </li>
            ))}
          </ul>
        </div>
      )}
      <table class="list">
        <thead>
          <tr>
            <th scope="col">Variant</th>
            <th scope="col">Participants</th>
            <th scope="col">p-value (primary metric)</th>
          </tr>
        </thead>
        <tbody>
          {results.variant_results.map((v) => (
            <tr>
              <td>
                {v.variant_key}
                {v.variant_key === control ? (analysed ? ' (control)' : ' (baseline)') : ''}
              </td>
              <td>{v.participant_count}</td>
              <td>{v.p_value_present ? v.p_value.toPrecision(3) : '—'}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {typeof results.sequential_srm_p_value === 'number' && (
        <p class="muted">
          Sample ratio check: p = {formatP(results.srm_p_value)} (chi-squared, valid when read once) · always-valid p = {formatP(results.sequential_srm_p_value)} (sequential, valid at
          every look)
        </p>
      )}
      {analysed ? <AnalysedMetrics experiment={experiment} results={results} control={control} /> : experiment.metric_keys.map((metric) => <MetricChart metric={metric} results={results} />)}
    </>
  );
}

/** The experiment's metrics (and any others the results report), the guardrails in their own section. */
function AnalysedMetrics({ experiment, results, control }: { experiment: Experiment; results: Results; control: string }) {
  const definitions = metricsOfExperiment(experiment);
  const keys = definitions.map(metricKeyOf);
  for (const v of results.variant_results) for (const key of Object.keys(v.metric_stats)) if (!keys.includes(key)) keys.push(key);
  const definitionOf = (key: string) => definitions.find((d) => metricKeyOf(d) === key);
  const analysis = analysisOf(results, experiment);
  const primary = keys.filter((key) => !definitionOf(key)?.guardrail);
  const guardrails = keys.filter((key) => definitionOf(key)?.guardrail);
  const section = (key: string) => <MetricAnalysis metric={key} definition={definitionOf(key)} results={results} control={control} analysis={analysis} index={keys.indexOf(key)} />;
  return (
    <>
      <h3>Metrics</h3>
      <p class="muted verdict-basis">{verdictBasisWords(analysis)}</p>
      {primary.length === 0 && <p class="muted">No metrics besides the guardrails.</p>}
      {primary.map(section)}
      {guardrails.length > 0 && (
        <section aria-labelledby="guardrails-heading" class="guardrails">
          <h3 id="guardrails-heading">Guardrail metrics</h3>
          <p class="muted">Watched for harm against each one's margin, not optimised: a "Failing" status is a reason to stop.</p>
          {guardrails.map(section)}
        </section>
      )}
    </>
  );
}
