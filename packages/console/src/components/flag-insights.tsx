import { useState } from 'preact/hooks';
import { apiPath, type Api } from '../api.ts';
import type { Environment, Flag, FlagInsights, FlagLifecycle, InsightsGranularity, Project } from '../records.ts';
import { hrefOf } from '../router.ts';
import { ErrorMessage, Loading, useLoad } from './common.tsx';
import { EvaluationChart, LineSwatch } from './evaluation-chart.tsx';
import { LastEvaluated, StageBadge, StatusBadge } from './flag-status.tsx';
import { chartData, insightsRange, variantLabel } from './insights-reading.ts';

/** Each period: its button, and how the chart's caption names it. */
const PERIODS: Array<[InsightsGranularity, string, string]> = [
  ['hour', 'Last 7 days, by hour', 'the last 7 days, by hour'],
  ['day', 'Last 90 days, by day (UTC)', 'the last 90 days, by day (UTC)'],
];

/**
 * A flag's Insights tab (docs/insights.md): its status and last evaluation in this environment,
 * its evaluation counts per variant over the last 7 days by hour or the last 90 by day, and its
 * status in every environment of the project with its lifecycle stage (the lifecycle route's row).
 */
export function FlagInsightsTab({ api, path, flag, environment, project }: { api: Api; path: string; flag: Flag; environment: Environment; project: Project }) {
  const [granularity, setGranularity] = useState<InsightsGranularity>('hour');
  const insights = useLoad(async () => {
    const range = insightsRange(granularity, Date.now());
    const answer = await api.get<FlagInsights>(`${path}/insights?from=${range.from}&to=${range.to}&granularity=${granularity}`);
    return { range, answer };
  }, [path, granularity]);
  const lifecycle = useLoad(() => api.get<FlagLifecycle>(apiPath`/v1/projects/${project.project_id}/flag-lifecycle`), [project.project_id]);
  const data = insights.data ? chartData(insights.data.answer.series, insights.data.range, flag.variants.map((v) => v.key)) : undefined;
  const period = PERIODS.find(([g]) => g === granularity)![2];
  const row = lifecycle.data?.flags.find((f) => f.key === flag.key);
  return (
    <>
      <h2>Insights</h2>
      <ErrorMessage error={insights.error} />
      {insights.data && (
        <p data-testid="insights-summary">
          Status in {environment.environment_name}: <StatusBadge status={insights.data.answer.status} /> · Last evaluated: <LastEvaluated at={insights.data.answer.last_evaluated_at_ms} />
        </p>
      )}
      <div class="row" role="group" aria-label="Period">
        {PERIODS.map(([g, label]) => (
          <button type="button" aria-pressed={g === granularity} onClick={() => setGranularity(g)}>
            {label}
          </button>
        ))}
      </div>
      {!insights.data && !insights.error && <Loading what="evaluation counts" />}
      {data && (
        <figure class="chart" aria-busy={insights.loading}>
          <figcaption id="evaluations-caption">
            Evaluations of {flag.key} in {environment.environment_name} per variant, {period}
          </figcaption>
          {data.total === 0 ? <p class="muted">No evaluations counted in this period.</p> : <EvaluationChart data={data} granularity={granularity} labelledBy="evaluations-caption" />}
          {data.total > 0 && (
            <table class="list compact" aria-label="Evaluations per variant">
              <thead>
                <tr>
                  <th scope="col">Variant</th>
                  <th scope="col">Evaluations</th>
                  <th scope="col">Share</th>
                </tr>
              </thead>
              <tbody>
                {data.lines.map((line, i) => (
                  <tr>
                    <td>
                      <LineSwatch index={i} /> {variantLabel(line.variant)}
                    </td>
                    <td>{line.total.toLocaleString('en')}</td>
                    <td>{`${((line.total / data.total) * 100).toFixed(1)} %`}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <p class="muted">Counts are written about once a minute, so the last minute may not show yet. Evaluations made by SDKs from their local copy of the flags are not counted.</p>
        </figure>
      )}

      <h3>In each environment</h3>
      <ErrorMessage error={lifecycle.error} />
      {!lifecycle.data && !lifecycle.error && <Loading what="the statuses" />}
      {lifecycle.data && !row && <p class="muted">{lifecycle.data.truncated ? 'This project has more flags than the lifecycle lists (10,000); this one is not among them.' : 'No lifecycle for this flag yet.'}</p>}
      {lifecycle.data && row && (
        <>
          <p>
            Lifecycle stage: <StageBadge stage={row.stage} /> <a href={hrefOf({ page: 'cleanup', id: project.project_id })}>Flag cleanup of {project.project_name}</a>
          </p>
          <table class="list" aria-label="Status in each environment">
            <thead>
              <tr>
                <th scope="col">Environment</th>
                <th scope="col">Status</th>
                <th scope="col">Last evaluated</th>
                <th scope="col">Decides the stage</th>
              </tr>
            </thead>
            <tbody>
              {lifecycle.data.environments.map((e) => (
                <tr>
                  <th scope="row">
                    {e.name}
                    {e.critical ? ' (critical)' : ''}
                  </th>
                  <td>
                    <StatusBadge status={row.environments[e.id]?.status} />
                  </td>
                  <td>
                    <LastEvaluated at={row.environments[e.id]?.last_evaluated_at_ms} />
                  </td>
                  <td>{e.counted ? (e.reports_evaluations ? 'yes' : 'yes (no evaluations reported: its configuration decides)') : 'no'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </>
  );
}
