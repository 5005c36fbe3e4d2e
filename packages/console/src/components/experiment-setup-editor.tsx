import { useState } from 'preact/hooks';
import { apiPath } from '../api.ts';
import type { Workspace } from '../app.tsx';
import type { Environment, EventDefinition, Experiment, Flag } from '../records.ts';
import { ActionForm, ErrorMessage, Loading, useLoad } from './common.tsx';
import { setupBody, setupOf } from './experiment-setup.ts';
import { SetupFields, withCode } from './experiment-setup-fields.tsx';
import { PowerPanel } from './power-panel.tsx';
import { plannedArms } from './power-reading.ts';

/**
 * Changes an experiment's setup: in DRAFT all of it; ACTIVE or PAUSED its metrics and analysis
 * settings only (the API refuses a new control or rule once the experiment ran). Render it with
 * `key` = the experiment's id and version, so a saved or reloaded experiment, or another one reached
 * by a link (the page component stays mounted), starts a fresh form.
 */
export function SetupEditor({ workspace, environment, experiment, onSaved }: { workspace: Workspace; environment: Environment; experiment: Experiment; onSaved: (updated: Experiment) => void }) {
  const { api } = workspace;
  const envPath = apiPath`/v1/environments/${environment.environment_id}`;
  const design = experiment.status === 'EXPERIMENT_STATUS_DRAFT';
  const choices = useLoad(
    async () => ({
      flag: await api.get<Flag>(apiPath`/v1/environments/${environment.environment_id}/flags/${experiment.flag_key}`),
      definitions: await api.get<EventDefinition[]>(`${envPath}/event-definitions`),
    }),
    [envPath, experiment.flag_key],
  );
  if (choices.error) return <ErrorMessage error={choices.error} />;
  if (!choices.data) return <Loading what="the experiment's setup" />;
  return <SetupForm api={api} envPath={envPath} path={apiPath`/v1/environments/${environment.environment_id}/experiments/${experiment.id}`} experiment={experiment} design={design} {...choices.data} onSaved={onSaved} />;
}

function SetupForm(props: { api: Workspace['api']; envPath: string; path: string; experiment: Experiment; design: boolean; flag: Flag; definitions: EventDefinition[]; onSaved: (updated: Experiment) => void }) {
  const { api, envPath, path, experiment, design, flag, definitions, onSaved } = props;
  const [draft, setDraft] = useState(() => setupOf(experiment, definitions));
  return (
    <section aria-labelledby="setup-heading">
      <h2 id="setup-heading">Setup</h2>
      <ActionForm
        label="Experiment setup"
        onSubmit={async () => {
          const updated = await api.patch<Experiment>(path, { version: experiment.version, ...setupBody(draft, design) }).catch((error: unknown) => {
            throw withCode(error);
          });
          onSaved(updated);
        }}
      >
        <SetupFields draft={draft} onChange={setDraft} variantKeys={experiment.variant_keys} flag={flag} definitions={definitions} design={design} />
        <button type="submit">Save setup</button>
      </ActionForm>
      {/* Planning is for a DRAFT; once it runs, the page's own "Power and duration" reads the experiment (GET …/power). */}
      {design && (
        <PowerPanel
          api={api}
          envPath={envPath}
          context={{ setup: draft, ...plannedArms(flag, experiment.variant_keys, draft.control, draft.ruleId), trafficAllocation: experiment.traffic_allocation }}
        />
      )}
    </section>
  );
}
