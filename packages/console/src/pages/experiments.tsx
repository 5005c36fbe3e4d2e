import { apiPath } from '../api.ts';
import { useState } from 'preact/hooks';
import type { EnvironmentPageProps } from '../app.tsx';
import { ActionForm, ErrorMessage, Loading, useLoad } from '../components/common.tsx';
import { newSetup, setupBody, type SetupDraft } from '../components/experiment-setup.ts';
import { SetupFields, withCode } from '../components/experiment-setup-fields.tsx';
import { PowerPanel } from '../components/power-panel.tsx';
import { plannedArms } from '../components/power-reading.ts';
import type { EventDefinition, Experiment, Flag } from '../records.ts';
import { hrefOf, navigate } from '../router.ts';

export const statusWords = (status: string): string => status.replace('EXPERIMENT_STATUS_', '').toLowerCase();

export function ExperimentsPage({ workspace, environment }: EnvironmentPageProps) {
  const { api } = workspace;
  const envPath = apiPath`/v1/environments/${environment.environment_id}`;
  const experiments = useLoad(() => api.get<Experiment[]>(`${envPath}/experiments`), [envPath]);
  const choices = useLoad(async () => ({ flags: await api.get<Flag[]>(`${envPath}/flags`), metrics: await api.get<EventDefinition[]>(`${envPath}/event-definitions`) }), [envPath]);
  const [name, setName] = useState('');
  const [flagKey, setFlagKey] = useState('');
  const [setup, setSetup] = useState<SetupDraft>(() => newSetup(undefined));
  const flag = choices.data?.flags.find((f) => f.key === flagKey);
  const variantKeys = (flag?.variants ?? []).map((v) => v.key);
  return (
    <section>
      <h1>Experiments</h1>
      <ErrorMessage error={experiments.error} />
      {experiments.loading && !experiments.data && <Loading what="experiments" />}
      <table class="list">
        <thead>
          <tr>
            <th scope="col">Experiment</th>
            <th scope="col">Flag</th>
            <th scope="col">Status</th>
            <th scope="col">Metrics</th>
          </tr>
        </thead>
        <tbody>
          {(experiments.data ?? []).map((x) => (
            <tr>
              <td>
                <a href={hrefOf({ envId: environment.environment_id, page: 'experiments', id: x.id })}>{x.name || x.id}</a>
              </td>
              <td>{x.flag_key}</td>
              <td>{statusWords(x.status)}</td>
              <td>{x.metric_keys.join(', ')}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>New experiment</h2>
      <ErrorMessage error={choices.error} />
      <ActionForm
        label="New experiment"
        onSubmit={async () => {
          const created = await api.post<Experiment>(`${envPath}/experiments`, { name, flag_key: flagKey, ...setupBody(setup, true) }).catch((error: unknown) => {
            throw withCode(error);
          });
          navigate({ envId: environment.environment_id, page: 'experiments', id: created.id });
        }}
      >
        <label>
          Name
          <input required value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
        </label>
        <label>
          Flag
          <select
            required
            value={flagKey}
            onChange={(e) => {
              const key = (e.target as HTMLSelectElement).value;
              setFlagKey(key);
              // A new flag: its own default control and rule; the metrics and settings stay.
              const { control, ruleId } = newSetup(choices.data?.flags.find((f) => f.key === key));
              setSetup((previous) => ({ ...previous, control, ruleId }));
            }}
          >
            <option value="">Choose a flag</option>
            {(choices.data?.flags ?? []).filter((f) => !f.archived).map((f) => (
              <option value={f.key}>{f.key}</option>
            ))}
          </select>
        </label>
        <SetupFields draft={setup} onChange={setSetup} variantKeys={variantKeys} flag={flag} definitions={choices.data?.metrics ?? []} design />
        <button type="submit">Create experiment</button>
      </ActionForm>
      {/* A new experiment takes all its flag's variants and all its traffic (traffic_allocation 1). */}
      <PowerPanel api={api} envPath={envPath} context={{ setup, ...plannedArms(flag, variantKeys, setup.control, setup.ruleId), trafficAllocation: 1 }} />
    </section>
  );
}
