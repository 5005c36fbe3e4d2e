import { apiPath } from '../api.ts';
import { useState } from 'preact/hooks';
import type { Workspace } from '../app.tsx';
import { ActionForm, ErrorMessage, Loading, formatTime, useLoad } from '../components/common.tsx';
import { ShownOnce } from '../components/shown-once.tsx';
import { memberAccessWords } from '../components/access-words.ts';
import { MemberAccessEditor } from '../components/member-access.tsx';
import { hrefOf } from '../router.ts';
import type { Invitation, User } from '../records.ts';

const ROLES: Array<[string, string]> = [
  ['org_member', 'Member: reads everything, manages flags, segments and experiments'],
  ['org_admin', 'Admin: also manages projects, environments, SDK keys, members and sign-in'],
];

/** Where an invitation's token is accepted in this console: `<origin>/#/accept-invitation/<token>`. */
export const invitationLink = (token: string): string => `${location.origin}/${hrefOf({ page: 'accept-invitation', id: token })}`;

export function MembersPage({ workspace }: { workspace: Workspace }) {
  const { api, session } = workspace;
  const orgPath = apiPath`/v1/management/orgs/${session.org_id}`;
  const users = useLoad(() => api.get<User[]>(`${orgPath}/users`), [orgPath]);
  const invitations = useLoad(() => api.get<Invitation[]>(`${orgPath}/invitations`).catch(() => [] as Invitation[]), [orgPath]);
  const [error, setError] = useState<unknown>(undefined);
  const [email, setEmail] = useState('');
  const [role, setRole] = useState('org_member');
  const [invited, setInvited] = useState<Invitation | undefined>(undefined);
  const [editingAccess, setEditingAccess] = useState<User | undefined>(undefined);
  const names = { projects: workspace.projects, environments: workspace.environments };
  // Only org admins may read or change bindings (the API refuses others).
  const isAdmin = workspace.org?.role === 'org_admin';
  const act = async (work: () => Promise<unknown>) => {
    setError(undefined);
    try {
      await work();
    } catch (caught) {
      setError(caught);
    }
    users.reload();
    invitations.reload();
  };
  return (
    <section>
      <h1>Members of {workspace.org?.org_name ?? 'this organisation'}</h1>
      <ul class="muted">
        {ROLES.map(([, words]) => (
          <li>{words}</li>
        ))}
      </ul>
      <ErrorMessage error={users.error ?? error} />
      {users.loading && !users.data && <Loading what="members" />}
      <table class="list">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Email</th>
            <th scope="col">Role</th>
            <th scope="col">Access</th>
            <th scope="col">
              <span class="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {(users.data ?? []).map((user) => (
            <tr>
              <td>{user.display_name}</td>
              <td>{user.email}</td>
              <td>
                <select aria-label={`Role of ${user.email}`} value={user.org_role} onChange={(e) => act(() => api.patch(`${orgPath}/users/${encodeURIComponent(user.user_id)}`, { org_role: (e.target as HTMLSelectElement).value }))}>
                  <option value="org_member">member</option>
                  <option value="org_admin">admin</option>
                </select>
              </td>
              <td>
                <span data-testid="member-access">{memberAccessWords(user, names)}</span>{' '}
                {isAdmin && user.org_role === 'org_member' && (
                  <button type="button" class="link" onClick={() => setEditingAccess(user)}>
                    Access of {user.email}
                  </button>
                )}
              </td>
              <td>
                {user.user_id !== session.user_id && (
                  <button type="button" class="danger" onClick={() => confirm(`Remove ${user.email} from the organisation?`) && act(() => api.delete(`${orgPath}/users/${encodeURIComponent(user.user_id)}`))}>
                    Remove {user.email}
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {editingAccess && <MemberAccessEditor key={editingAccess.user_id} workspace={workspace} user={editingAccess} onClose={() => setEditingAccess(undefined)} onSaved={users.reload} />}
      <h2>Invitations</h2>
      {invited && !invited.token && invited.mailed && (
        <div class="notice" role="status">
          Invitation mailed to {invited.email}: only they receive its link.
        </div>
      )}
      {invited?.token && (
        <ShownOnce value={invitationLink(invited.token)} testId="invitation-link" copyLabel="Copy the link">
          Invitation created for {invited.email}. Send them this link (shown once; it works for 7 days, once): it opens a page where they create their account, or sign
          in with the one they have, and join.
        </ShownOnce>
      )}
      <ul>
        {(invitations.data ?? []).map((inv) => (
          <li>
            {inv.email} as {inv.org_role.replace('org_', '')}, invited by {inv.created_by?.email ?? 'an unrecorded admin'}, expires {formatTime(inv.expires_at)}{' '}
            <button type="button" class="link" onClick={() => act(() => api.delete(`${orgPath}/invitations/${encodeURIComponent(inv.invitation_id)}`))}>
              Withdraw the invitation of {inv.email}
            </button>
          </li>
        ))}
      </ul>
      <ActionForm
        label="Invite someone"
        class="inline"
        onSubmit={async () => {
          setInvited(await api.post<Invitation>(`${orgPath}/invitations`, { email, org_role: role }));
          setEmail('');
          invitations.reload();
        }}
      >
        <label>
          Email
          <input type="email" required value={email} onInput={(e) => setEmail((e.target as HTMLInputElement).value)} />
        </label>
        <label>
          Role
          <select value={role} onChange={(e) => setRole((e.target as HTMLSelectElement).value)}>
            <option value="org_member">member</option>
            <option value="org_admin">admin</option>
          </select>
        </label>
        <button type="submit">Invite</button>
      </ActionForm>
    </section>
  );
}
