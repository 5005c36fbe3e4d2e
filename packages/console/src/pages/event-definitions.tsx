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
  const [clientAllowed, setClientAllowed] = useState(false);
  return (
    <section>
      <h1>Event definitions</h1>
      <p class="muted">
        Metric events an SDK may send in this environment, and experiments may measure. Server keys may send every event defined here; client keys (browsers and apps) only those
        their "Client apps" column says they may send.
      </p>
      <ErrorMessage error={definitions.error} />
      {definitions.loading && !definitions.data && <Loading what="event definitions" />}
      <table class="list">
        <thead>
          <tr>
            <th scope="col">Key</th>
            <th scope="col">Value</th>
            <th scope="col">Description</th>
            <th scope="col">Client apps</th>
          </tr>
        </thead>
        <tbody>
          {(definitions.data ?? []).map((d) => (
            <tr>
              <td>{d.key}</td>
              <td>{d.value_type}</td>
              <td>{d.description}</td>
              <td>
                <ClientAllowedSwitch
                  definition={d}
                  save={(allowed) => api.put<EventDefinition>(apiPath`/v1/environments/${environment.environment_id}/event-definitions/${d.key}`, { client_allowed: allowed })}
                  onSaved={(updated) => definitions.set((previous) => (previous ?? []).map((x) => (x.key === updated.key ? updated : x)))}
                />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>New event definition</h2>
      <ActionForm
        label="New event definition"
        class="inline"
        onSubmit={async () => {
          // client_allowed is sent only when chosen, so a server without the field still takes the rest.
          await api.post(base, { key, value_type: valueType, description, ...(clientAllowed ? { client_allowed: true } : {}) });
          setKey('');
          setDescription('');
          setClientAllowed(false);
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
        <label>
          <input type="checkbox" checked={clientAllowed} onChange={(e) => setClientAllowed((e.target as HTMLInputElement).checked)} />
          Client apps may send it
        </label>
        <button type="submit">Create event definition</button>
      </ActionForm>
    </section>
  );
}

/**
 * Whether client keys may send the event (`client_allowed`, docs/client-side.md "Exposures and
 * events"), saved at once with the definition's update route.
 */
function ClientAllowedSwitch({ definition, save, onSaved }: { definition: EventDefinition; save: (allowed: boolean) => Promise<EventDefinition>; onSaved: (updated: EventDefinition) => void }) {
  const [pending, setPending] = useState<boolean | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const allowed = definition.client_allowed === true;
  return (
    <>
      <label class="switch">
        <input
          type="checkbox"
          role="switch"
          checked={pending ?? allowed}
          aria-busy={pending !== undefined}
          aria-label={`Client apps may send ${definition.key}`}
          onChange={async () => {
            if (pending !== undefined) return;
            setPending(!allowed);
            setError(undefined);
            try {
              onSaved(await save(!allowed));
            } catch (caught) {
              setError(caught);
            } finally {
              setPending(undefined);
            }
          }}
        />
        <span aria-hidden="true">{(pending ?? allowed) ? 'may send' : 'may not send'}</span>
      </label>
      <ErrorMessage error={error} />
    </>
  );
}
