import { useState } from 'preact/hooks';
import { apiPath, type Api } from '../api.ts';
import { ActionForm, ErrorMessage, Loading, useLoad } from '../components/common.tsx';
import { MailOutbox } from './mail-outbox.tsx';

interface OrgRecord {
  org_id: string;
  org_name: string;
}

/**
 * What a system-org administrator (the account `npm start` prints) does in the console: create
 * organisations and their first admin, then sign in as that admin to manage projects and flags.
 * System-org accounts only use the /v1/admin routes (docs/contract.md "Administration (system-org users)").
 */
export function AdminPage({ api }: { api: Api }) {
  const orgs = useLoad(() => api.get<OrgRecord[]>('/v1/admin/orgs'), []);
  const [orgName, setOrgName] = useState('');
  const [email, setEmail] = useState('');
  const [displayName, setDisplayName] = useState('');
  const [password, setPassword] = useState('');
  const [created, setCreated] = useState('');
  return (
    <main class="page" id="main">
      <div class="row">
        <h1>Administration</h1>
        <a href="#/account">My account</a>
        <button type="button" class="link" onClick={() => api.logout()}>
          Sign out
        </button>
      </div>
      <p class="muted">You are signed in as a system administrator. Flags live in organisations: create one with its first administrator, then sign out and sign in as that person.</p>
      <ErrorMessage error={orgs.error} />
      {orgs.loading && !orgs.data && <Loading what="organisations" />}
      <ul>
        {(orgs.data ?? []).map((org) => (
          <li>{org.org_name}</li>
        ))}
      </ul>
      <h2>New organisation</h2>
      <ActionForm
        label="New organisation"
        onSubmit={async () => {
          const org = await api.post<OrgRecord>('/v1/admin/orgs', { name: orgName });
          await api.post(apiPath`/v1/admin/orgs/${org.org_id}/users`, { email, display_name: displayName || email, password, org_role: 'org_admin' });
          setCreated(`Created ${org.org_name} with ${email} as its administrator. Sign out and sign in as ${email}.`);
          orgs.reload();
        }}
      >
        <label>
          Organisation name
          <input required value={orgName} onInput={(e) => setOrgName((e.target as HTMLInputElement).value)} />
        </label>
        <label>
          Administrator's email
          <input type="email" required value={email} onInput={(e) => setEmail((e.target as HTMLInputElement).value)} />
        </label>
        <label>
          Administrator's name
          <input value={displayName} onInput={(e) => setDisplayName((e.target as HTMLInputElement).value)} />
        </label>
        <label>
          Administrator's password
          <input type="password" required minLength={8} autocomplete="new-password" value={password} onInput={(e) => setPassword((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit">Create organisation</button>
      </ActionForm>
      <p role="status">{created}</p>
      <MailOutbox api={api} />
    </main>
  );
}
