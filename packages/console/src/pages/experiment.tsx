import { useState } from 'preact/hooks';
import { apiPath, ApiError } from '../api.ts';
import type { EnvironmentPageProps } from '../app.tsx';
import { ErrorMessage, Loading, formatTime, useLoad } from '../components/common.tsx';
import { ExperimentPowerSection } from '../components/experiment-power.tsx';
import { ExperimentResults } from '../components/experiment-results.tsx';
import { SetupEditor } from '../components/experiment-setup-editor.tsx';
import { controlOf } from '../components/experiment-setup.ts';
import type { Experiment, Results } from '../records.ts';
import { hrefOf } from '../router.ts';
import { statusWords } from './experiments.tsx';

/** Legal moves from each status (docs/contract.md "Experiments and statistics"). */
const MOVES: Record<string, Array<[string, string]>> = {
  EXPERIMENT_STATUS_DRAFT: [['ACTIVE', 'Start'], ['CONCLUDED', 'Conclude']],
  EXPERIMENT_STATUS_ACTIVE: [['PAUSED', 'Pause'], ['CONCLUDED', 'Conclude']],
  EXPERIMENT_STATUS_PAUSED: [['ACTIVE', 'Resume'], ['CONCLUDED', 'Conclude']],
  EXPERIMENT_STATUS_CONCLUDED: [],
};

export function ExperimentPage({ workspace, environment, experimentId }: EnvironmentPageProps & { experimentId: string }) {
  const { api } = workspace;
  const path = apiPath`/v1/environments/${environment.environment_id}/experiments/${experimentId}`;
  const experiment = useLoad(() => api.get<Experiment>(path), [path]);
  const results = useLoad(
    () =>
      api.get<Results>(`${path}/results`).catch((error: unknown) => {
        if (error instanceof ApiError && error.status === 404) return undefined;
        throw error;
      }),
    [path],
  );
  const [actionError, setActionError] = useState<unknown>(undefined);
  const [status, setStatus] = useState('');
  if (experiment.error) return <ErrorMessage error={experiment.error} />;
  if (!experiment.data) return <Loading what="the experiment" />;
  const x = experiment.data;
  const act = async (work: () => Promise<void>) => {
    setActionError(undefined);
    try {
      await work();
    } catch (error) {
      setActionError(error);
    }
  };
  const r = results.data;
  return (
    <section>
      <p>
        <a href={hrefOf({ envId: environment.environment_id, page: 'experiments' })}>← All experiments</a>
      </p>
      <h1>{x.name || x.id}</h1>
      <p class="muted">
        Flag <a href={hrefOf({ envId: environment.environment_id, page: 'flags', id: x.flag_key })}>{x.flag_key}</a> · {statusWords(x.status)} · variants {x.variant_keys.join(', ')} · control {controlOf(x)} · metrics{' '}
        {x.metric_keys.join(', ') || 'none'}
      </p>
      <div class="row">
        {(MOVES[x.status] ?? []).map(([to, words]) => (
          <button type="button" onClick={() => act(async () => void (await api.post(`${path}/transitions`, { new_status: to, version: x.version }), experiment.reload()))}>
            {words}
          </button>
        ))}
        <button
          type="button"
          onClick={() =>
            act(async () => {
              const job = await api.post<{ job_id: string }>(apiPath`/v1/experiments/${x.id}/recompute`);
              setStatus(`Recomputing (job ${job.job_id}); this page reloads the results when it is done.`);
              for (let i = 0; i < 60; i++) {
                await new Promise((resolve) => setTimeout(resolve, 1000));
                const state = await api.get<{ status: string; error: string }>(apiPath`/v1/jobs/${job.job_id}`);
                if (state.status === 'completed' || state.status === 'failed') {
                  setStatus(state.status === 'completed' ? 'Results recomputed.' : `The computation failed: ${state.error}`);
                  results.reload();
                  return;
                }
              }
              setStatus('Still computing; reload the page later.');
            })
          }
        >
          Recompute results
        </button>
      </div>
      <p role="status">{status}</p>
      <ErrorMessage error={actionError ?? results.error} />
      <h2>Results</h2>
      {results.loading && !r && <Loading what="results" />}
      {!results.loading && !r && <p>No results yet: they are computed while the experiment runs, or when you press Recompute.</p>}
      {r && (
        <>
          <p class="muted">
            Computed {formatTime(r.computed_at_ms)}
            {r.is_stale ? ' · stale: exposures or events arrived since; recompute for the latest' : ''}
            {r.next_run_at_ms > 0 ? ` · next run ${formatTime(r.next_run_at_ms)}` : ''}
          </p>
          <ExperimentResults experiment={x} results={r} />
        </>
      )}
      {x.status !== 'EXPERIMENT_STATUS_DRAFT' && <ExperimentPowerSection key={x.id} api={api} path={path} />}
      {x.status !== 'EXPERIMENT_STATUS_CONCLUDED' && (
        <SetupEditor key={`${x.id}:${x.version}`} workspace={workspace} environment={environment} experiment={x} onSaved={(updated) => (experiment.set(updated), setStatus('Setup saved.'))} />
      )}
    </section>
  );
}
