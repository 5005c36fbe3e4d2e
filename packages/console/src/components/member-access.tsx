import { apiPath } from '../api.ts';
import { useState } from 'preact/hooks';
import type { Workspace } from '../app.tsx';
import type { MemberAccess, RoleBinding, User } from '../records.ts';
import { BINDING_ROLES, bindingWords } from './access-words.ts';
import { ErrorMessage, Loading, useLoad } from './common.tsx';

/** The API's limit on a member's bindings. */
const MAX_BINDINGS = 100;

/**
 * A member's access (docs/access.md "Role bindings"): rows of role + project + optional
 * environment, saved as a whole (PUT); "Reset to org role" goes back to the default (DELETE).
 * Org admins are admins everywhere and have no list.
 */
export function MemberAccessEditor({ workspace, user, onClose, onSaved }: { workspace: Workspace; user: User; onClose: () => void; onSaved: () => void }) {
  const { api, session, projects, environments } = workspace;
  const path = apiPath`/v1/management/orgs/${session.org_id}/members/${user.user_id}/role-bindings`;
  const access = useLoad(() => api.get<MemberAccess>(path), [path]);
  const [rows, setRows] = useState<RoleBinding[] | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState('');
  const names = { projects, environments };
  const shown = rows ?? (access.data && !access.data.default ? access.data.bindings : []);
  const change = (next: RoleBinding[]) => {
    setDone('');
    setRows(next);
  };
  const act = async (work: () => Promise<MemberAccess | undefined>, said: string) => {
    setBusy(true);
    setError(undefined);
    setDone('');
    try {
      const answer = await work();
      if (answer) access.set(answer);
      else access.reload();
      setRows(undefined);
      setDone(said);
      onSaved();
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="card" aria-label={`Access of ${user.email}`}>
      <h2>Access of {user.email}</h2>
      <ErrorMessage error={access.error} />
      {access.loading && !access.data && <Loading what="access" />}
      {access.data && (
        <p data-testid="member-access-summary">
          Now:{' '}
          {access.data.org_role === 'org_admin'
            ? 'admin everywhere'
            : access.data.default
              ? 'editor everywhere (default)'
              : access.data.bindings.length === 0
                ? 'no access'
                : access.data.bindings.map((b) => bindingWords(b, names)).join('; ')}
        </p>
      )}
      {access.data?.org_role === 'org_admin' ? (
        <p class="muted">Org admins are admins everywhere: make them a member first to limit what they can do.</p>
      ) : (
        <fieldset disabled={busy || !access.data}>
          <p class="muted">Each row gives a role in a project, or in one environment of it. A member with rows has only what they give; with none saved, the org role's default (editor everywhere).</p>
          <table class="list compact" aria-label={`Role bindings of ${user.email}`}>
            <thead>
              <tr>
                <th scope="col">Role</th>
                <th scope="col">Project</th>
                <th scope="col">Environment</th>
                <th scope="col">
                  <span class="visually-hidden">Remove</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {shown.map((row, index) => {
                const replace = (next: RoleBinding) => change(shown.map((r, at) => (at === index ? next : r)));
                const project = row.project_id ?? environments.find((e) => e.environment_id === row.environment_id)?.project_id ?? '';
                return (
                  <tr data-testid="binding-row">
                    <td>
                      <select aria-label={`Role of row ${index + 1}`} value={row.role} onChange={(e) => replace({ ...row, role: (e.target as HTMLSelectElement).value as RoleBinding['role'] })}>
                        {BINDING_ROLES.map(([role]) => (
                          <option value={role}>{role}</option>
                        ))}
                      </select>
                    </td>
                    <td>
                      <select
                        aria-label={`Project of row ${index + 1}`}
                        value={project}
                        onChange={(e) => {
                          const value = (e.target as HTMLSelectElement).value;
                          replace({ role: row.role, ...(value === '' ? {} : { project_id: value }) });
                        }}
                      >
                        <option value="">every project</option>
                        {projects.map((p) => (
                          <option value={p.project_id}>{p.project_name}</option>
                        ))}
                      </select>
                    </td>
                    <td>
                      <select
                        aria-label={`Environment of row ${index + 1}`}
                        value={row.environment_id ?? ''}
                        disabled={project === ''}
                        onChange={(e) => {
                          const value = (e.target as HTMLSelectElement).value;
                          replace({ role: row.role, project_id: project, ...(value === '' ? {} : { environment_id: value }) });
                        }}
                      >
                        <option value="">all its environments</option>
                        {environments
                          .filter((e) => e.project_id === project)
                          .map((e) => (
                            <option value={e.environment_id}>{e.environment_name}</option>
                          ))}
                      </select>
                    </td>
                    <td>
                      <button type="button" onClick={() => change(shown.filter((_, at) => at !== index))}>
                        Remove row {index + 1}
                      </button>
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
          <div class="row">
            <button type="button" disabled={shown.length >= MAX_BINDINGS} onClick={() => change([...shown, { role: 'viewer', ...(projects[0] ? { project_id: projects[0].project_id } : {}) }])}>
              Add a row
            </button>
            <button type="button" onClick={() => act(() => api.put<MemberAccess>(path, { bindings: shown }), `Access of ${user.email} saved.`)}>
              Save access
            </button>
            <button type="button" onClick={() => act(() => api.delete<MemberAccess | undefined>(path), `${user.email} is back to the org role's default.`)}>
              Reset to org role
            </button>
          </div>
        </fieldset>
      )}
      <ErrorMessage error={error} />
      <p role="status">{done}</p>
      <button type="button" onClick={onClose}>
        Close the access of {user.email}
      </button>
    </section>
  );
}
