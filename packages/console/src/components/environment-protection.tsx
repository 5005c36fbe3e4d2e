import { apiPath } from '../api.ts';
import { useState } from 'preact/hooks';
import type { Workspace } from '../app.tsx';
import type { Environment } from '../records.ts';
import { ErrorMessage } from './common.tsx';

type Setting = 'critical' | 'require_comment';

const WORDS: Record<Setting, { label: string; on: string; off: string }> = {
  critical: { label: 'Critical', on: 'changes ask to type its name', off: 'changes need no confirmation' },
  require_comment: { label: 'Require a comment', on: 'every change keeps a comment', off: 'comments are optional' },
};

/**
 * An environment's protection (docs/access.md "Critical environments"): "Critical" makes every
 * change by a person there ask to type the environment's name; "Require a comment" makes every
 * change (people and API tokens) carry one. Saved with PATCH /v1/management/environments/{id}.
 */
export function EnvironmentProtection({ workspace, environment, projectName }: { workspace: Workspace; environment: Environment; projectName: string }) {
  const [pending, setPending] = useState<Setting | undefined>(undefined);
  const [saved, setSaved] = useState<Partial<Record<Setting, boolean>>>({});
  const [error, setError] = useState<unknown>(undefined);
  const [done, setDone] = useState('');
  const current = (setting: Setting) => saved[setting] ?? environment[setting] === true;
  return (
    <div class="row" data-testid={`protection-${environment.environment_id}`}>
      {(['critical', 'require_comment'] as Setting[]).map((setting) => (
        <label class="switch">
          <input
            type="checkbox"
            role="switch"
            checked={current(setting)}
            aria-busy={pending === setting}
            aria-label={`${WORDS[setting].label}: ${projectName} / ${environment.environment_name}`}
            onChange={async (event) => {
              const input = event.target as HTMLInputElement;
              if (pending !== undefined) {
                input.checked = current(setting);
                return;
              }
              const target = !current(setting);
              setPending(setting);
              setError(undefined);
              setDone('');
              try {
                const updated = await workspace.api.patch<Environment | undefined>(apiPath`/v1/management/environments/${environment.environment_id}`, { [setting]: target });
                const known = workspace.environments.find((e) => e.environment_id === environment.environment_id) ?? environment;
                workspace.api.rememberEnvironment(updated?.environment_id ? { ...known, ...updated } : { ...known, [setting]: target });
                setSaved((previous) => ({ ...previous, [setting]: typeof updated?.[setting] === 'boolean' ? updated[setting] : target }));
                setDone(`${environment.environment_name}: ${target ? WORDS[setting].on : WORDS[setting].off}.`);
                // The Api reads protection from the workspace's environments: reload them.
                workspace.reloadWorkspace();
              } catch (caught) {
                input.checked = current(setting);
                setError(caught);
              } finally {
                setPending(undefined);
              }
            }}
          />
          <span aria-hidden="true">{WORDS[setting].label}</span>
        </label>
      ))}
      <span role="status">{done}</span>
      <ErrorMessage error={error} />
    </div>
  );
}
