import { apiPath } from '../api.ts';
import { useState } from 'preact/hooks';
import type { EnvironmentPageProps } from '../app.tsx';
import { ActionForm, ErrorMessage, Loading, useLoad } from '../components/common.tsx';
import type { EventDefinition } from '../records.ts';

export function EventDefinitionsPage({ workspace, environment }: EnvironmentPageProps) {
  const { api } = workspace;
  const base = apiPath`/v1/environments/${environment.environment_id}/event-definitions`;
  const definitions = useLoad(() => api.get<EventDefinition[]>(base), [base]);
  const [key, setKey] = useState('');
  const [valueType, setValueType] = useState('bool');
  const [description, setDescription] = useState('');
  return (
    <section>
      <h1>Event definitions</h1>
      <p class="muted">Metric events an SDK may send in this environment, and experiments may measure.</p>
      <ErrorMessage error={definitions.error} />
      {definitions.loading && !definitions.data && <Loading what="event definitions" />}
      <table class="list">
        <thead>
          <tr>
            <th scope="col">Key</th>
            <th scope="col">Value</th>
            <th scope="col">Description</th>
          </tr>
        </thead>
        <tbody>
          {(definitions.data ?? []).map((d) => (
            <tr>
              <td>{d.key}</td>
              <td>{d.value_type}</td>
              <td>{d.description}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>New event definition</h2>
      <ActionForm
        label="New event definition"
        class="inline"
        onSubmit={async () => {
          await api.post(base, { key, value_type: valueType, description });
          setKey('');
          setDescription('');
          definitions.reload();
        }}
      >
        <label>
          Key
          <input required value={key} onInput={(e) => setKey((e.target as HTMLInputElement).value)} />
        </label>
        <label>
          Value type
          <select value={valueType} onChange={(e) => setValueType((e.target as HTMLSelectElement).value)}>
            <option value="bool">bool (converted or not)</option>
            <option value="int">int (a count)</option>
            <option value="double">double (an amount)</option>
          </select>
        </label>
        <label>
          Description
          <input value={description} onInput={(e) => setDescription((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit">Create event definition</button>
      </ActionForm>
    </section>
  );
}
