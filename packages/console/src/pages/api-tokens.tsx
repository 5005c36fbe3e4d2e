import { apiPath } from '../api.ts';
import { useState } from 'preact/hooks';
import type { Workspace } from '../app.tsx';
import { BINDING_ROLES, scopeWords } from '../components/access-words.ts';
import { ActionForm, ConfirmDialog, ErrorMessage, Loading, formatTime, useLoad } from '../components/common.tsx';
import { CopyButton } from '../components/copy-button.tsx';
import { ShownOnce } from '../components/shown-once.tsx';
import type { ApiTokenRecord, RoleBinding } from '../records.ts';

type ScopeKind = 'org' | 'projects' | 'environments';

interface Draft {
  name: string;
  role: RoleBinding['role'];
  scope: ScopeKind;
  projectIds: string[];
  environmentIds: string[];
  /** `YYYY-MM-DD` from the date input, or '' for no expiry. */
  expires: string;
}

const EMPTY: Draft = { name: '', role: 'editor', scope: 'org', projectIds: [], environmentIds: [], expires: '' };

/** The end of the chosen day in the person's time zone (a token "until" a date works all that day). */
export function expiryOf(date: string): number | null {
  if (date === '') return null;
  const ms = new Date(`${date}T23:59:59.999`).getTime();
  return Number.isNaN(ms) ? null : ms;
}

const toggled = (list: string[], id: string, on: boolean) => (on ? [...list.filter((x) => x !== id), id] : list.filter((x) => x !== id));

/**
 * API tokens of the org (docs/access.md "API tokens"; org admins): tokens for scripts and CI with
 * a role over the whole org, some projects or some environments. A new token is shown once, with
 * a curl line that uses it; revoking one ends it on every server at once.
 */
export function ApiTokensPage({ workspace }: { workspace: Workspace }) {
  const { api, session, projects, environments } = workspace;
  const base = apiPath`/v1/management/orgs/${session.org_id}/api-tokens`;
  const tokens = useLoad(() => api.get<ApiTokenRecord[]>(base), [base]);
  const [draft, setDraft] = useState<Draft>(EMPTY);
  const [created, setCreated] = useState<ApiTokenRecord | undefined>(undefined);
  const [revoking, setRevoking] = useState<ApiTokenRecord | undefined>(undefined);
  const [done, setDone] = useState('');
  const names = { projects, environments };
  const update = (changes: Partial<Draft>) => setDraft((previous) => ({ ...previous, ...changes }));
  const now = Date.now();
  return (
    <section>
      <h1>API tokens</h1>
      <p class="muted">
        An API token lets a script or a CI job use the REST API with a role you choose (viewer, editor or admin) over the whole organisation, some projects or some environments. It
        is shown once, when it is created; only a hash is kept. It never manages members, tokens or sign-in, and it stops working when it expires or is revoked.
      </p>
      <ErrorMessage error={tokens.error} />
      {tokens.loading && !tokens.data && <Loading what="API tokens" />}
      {created?.token && (
        <ShownOnce key={created.id} value={created.token} testId="new-api-token" copyLabel="Copy token">
          <p>API token {created.name} created. Copy it now: it will not be shown again.</p>
          <p>Try it:</p>
          <pre class="command" data-testid="api-token-curl">{curlLine(created, workspace)}</pre>
          <CopyButton value={curlLine(created, workspace)} label="Copy the curl line" />
        </ShownOnce>
      )}
      <table class="list" aria-label="API tokens">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Role</th>
            <th scope="col">Scope</th>
            <th scope="col">Created by</th>
            <th scope="col">Created</th>
            <th scope="col">Expires</th>
            <th scope="col">Last used</th>
            <th scope="col">
              <span class="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {(tokens.data ?? []).map((token) => (
            <tr data-testid="api-token-row">
              <td>
                {token.name}
                <br />
                <code>{token.token_prefix}…</code>
              </td>
              <td>{token.role}</td>
              <td>{scopeWords(token.scope, names)}</td>
              <td>{token.created_by?.email ?? <span class="muted">unknown</span>}</td>
              <td>{formatTime(token.created_at_ms)}</td>
              <td>{token.expires_at_ms === null ? 'never' : `${formatTime(token.expires_at_ms)}${token.expires_at_ms <= now ? ' (expired)' : ''}`}</td>
              <td>{typeof token.last_used_at_ms === 'number' ? formatTime(token.last_used_at_ms) : <span class="muted">never</span>}</td>
              <td>
                <button type="button" class="danger" onClick={() => setRevoking(token)}>
                  Revoke {token.name}
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {tokens.data?.length === 0 && <p>No API token yet.</p>}
      <p role="status">{done}</p>
      {revoking && (
        <ConfirmDialog
          key={revoking.id}
          titleId="revoke-token-title"
          question={
            <>
              Revoke the API token {revoking.name} (<code>{revoking.token_prefix}…</code>)? Scripts using it stop working at once.
            </>
          }
          confirmLabel="Yes, revoke it"
          onConfirm={async () => {
            await api.delete(apiPath`/v1/management/orgs/${session.org_id}/api-tokens/${revoking.id}`);
            if (created?.id === revoking.id) setCreated(undefined);
            setDone(`API token ${revoking.name} revoked.`);
            setRevoking(undefined);
            tokens.reload();
          }}
          onCancel={() => setRevoking(undefined)}
        />
      )}
      <h2>New API token</h2>
      <ActionForm
        label="New API token"
        onSubmit={async () => {
          const scope =
            draft.scope === 'projects' ? { project_ids: draft.projectIds } : draft.scope === 'environments' ? { environment_ids: draft.environmentIds } : undefined;
          if (scope && (scope.project_ids ?? scope.environment_ids ?? []).length === 0) throw new Error(`Choose at least one ${draft.scope === 'projects' ? 'project' : 'environment'}.`);
          const made = await api.post<ApiTokenRecord>(base, { name: draft.name.trim(), role: draft.role, ...(scope ? { scope } : {}), expires_at_ms: expiryOf(draft.expires) });
          setCreated(made);
          setDone('');
          setDraft(EMPTY);
          tokens.reload();
        }}
      >
        <label>
          Token name
          <input required maxLength={100} value={draft.name} onInput={(e) => update({ name: (e.target as HTMLInputElement).value })} />
        </label>
        <label>
          Role
          <select value={draft.role} onChange={(e) => update({ role: (e.target as HTMLSelectElement).value as RoleBinding['role'] })}>
            {BINDING_ROLES.map(([role, words]) => (
              <option value={role}>{words}</option>
            ))}
          </select>
        </label>
        <fieldset>
          <legend>Scope</legend>
          {(
            [
              ['org', 'The whole organisation'],
              ['projects', 'Chosen projects'],
              ['environments', 'Chosen environments'],
            ] as Array<[ScopeKind, string]>
          ).map(([kind, words]) => (
            <label>
              <input type="radio" name="token-scope" checked={draft.scope === kind} onChange={() => update({ scope: kind })} />
              {words}
            </label>
          ))}
          {draft.scope === 'projects' && (
            <fieldset class="inline">
              <legend>Projects</legend>
              {projects.map((p) => (
                <label>
                  <input type="checkbox" checked={draft.projectIds.includes(p.project_id)} onChange={(e) => update({ projectIds: toggled(draft.projectIds, p.project_id, (e.target as HTMLInputElement).checked) })} />
                  {p.project_name}
                </label>
              ))}
            </fieldset>
          )}
          {draft.scope === 'environments' &&
            projects.map((p) => (
              <fieldset class="inline">
                <legend>{`Environments of ${p.project_name}`}</legend>
                {environments
                  .filter((e) => e.project_id === p.project_id)
                  .map((e) => (
                    <label>
                      <input
                        type="checkbox"
                        aria-label={`${p.project_name} / ${e.environment_name}`}
                        checked={draft.environmentIds.includes(e.environment_id)}
                        onChange={(event) => update({ environmentIds: toggled(draft.environmentIds, e.environment_id, (event.target as HTMLInputElement).checked) })}
                      />
                      {e.environment_name}
                    </label>
                  ))}
              </fieldset>
            ))}
        </fieldset>
        <label>
          Expires at the end of (optional)
          <input type="date" min={new Date().toISOString().slice(0, 10)} value={draft.expires} onInput={(e) => update({ expires: (e.target as HTMLInputElement).value })} />
        </label>
        <div class="row">
          <button type="submit">Create the token</button>
        </div>
      </ActionForm>
    </section>
  );
}

/**
 * A first call with the new token: the flags of an environment it can read (the first of its
 * scope), or the org's projects when the org has no environment yet.
 */
function curlLine(token: ApiTokenRecord, workspace: Workspace): string {
  const inScope = (environmentId: string, projectId: string) =>
    token.scope?.environment_ids?.length ? token.scope.environment_ids.includes(environmentId) : token.scope?.project_ids?.length ? token.scope.project_ids.includes(projectId) : true;
  const environment = workspace.environments.find((e) => inScope(e.environment_id, e.project_id));
  const path = environment ? apiPath`/v1/environments/${environment.environment_id}/flags` : apiPath`/v1/management/orgs/${workspace.session.org_id}/projects`;
  return `curl -H "Authorization: Bearer ${token.token}" ${location.origin}${path}`;
}
