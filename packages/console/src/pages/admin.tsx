import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { apiPath, type Api } from '../api.ts';
import { ActionForm, ErrorMessage, Loading, useLoad } from '../components/common.tsx';
import { hrefOf, useRoute } from '../router.ts';
import { MailOutbox } from './mail-outbox.tsx';

interface OrgRecord {
  org_id: string;
  org_name: string;
}

/**
 * What a system-org administrator (`system@localhost` after the first run, docs/first-run.md)
 * does in the console: list organisations (each a link to its page, `#/orgs/{org_id}`), create
 * one with its first admin, add an administrator to one. System-org accounts only use the
 * /v1/admin routes (docs/contract.md "Administration (system-org users)"): they do not see inside
 * an org, so an org's page gives its sign-in link for the people who do.
 */
export function AdminPage({ api }: { api: Api }) {
  const route = useRoute();
  const orgs = useLoad(() => api.get<OrgRecord[]>('/v1/admin/orgs'), []);
  const selected = route.page === 'orgs' && route.id ? (orgs.data ?? []).find((org) => org.org_id === route.id) : undefined;
  return (
    <main class="page" id="main">
      <div class="row">
        <h1>Administration</h1>
        <a href="#/account">My account</a>
        <button type="button" class="link" onClick={() => api.logout()}>
          Sign out
        </button>
      </div>
      <p class="muted">
        You are signed in as a system administrator. Flags live in organisations: create one with its first administrator, then sign out and sign in as that person.
      </p>
      <ErrorMessage error={orgs.error} />
      {orgs.loading && !orgs.data && <Loading what="organisations" />}
      <nav aria-label="Organisations">
        <ul>
          {(orgs.data ?? []).map((org) => (
            <li>
              <a href={hrefOf({ page: 'orgs', id: org.org_id })} aria-current={selected?.org_id === org.org_id ? 'page' : undefined}>
                {org.org_name}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      {selected ? (
        <OrgPanel key={selected.org_id} api={api} org={selected} />
      ) : (
        route.page === 'orgs' && route.id && orgs.data && <p role="alert">There is no such organisation.</p>
      )}
      <NewOrgForm api={api} onCreated={orgs.reload} />
      <MailOutbox api={api} />
    </main>
  );
}

/** An organisation as a system administrator sees it: its sign-in link, and a form to add an administrator. */
function OrgPanel({ api, org }: { api: Api; org: OrgRecord }) {
  const signInLink = `${location.origin}${location.pathname}${hrefOf({ page: 'sign-in', id: org.org_id })}`;
  const [done, setDone] = useState('');
  return (
    <section class="card" aria-labelledby="org-title">
      <h2 id="org-title">{org.org_name}</h2>
      <p>
        Its members sign in at <a href={signInLink}>{signInLink}</a> (with its single sign-on providers, when it has some) or on the console's sign-in page.
      </p>
      <p class="muted">
        Organisation id <code>{org.org_id}</code>
      </p>
      <AdministratorFields
        label={`New administrator of ${org.org_name}`}
        submit="Add administrator"
        onSubmit={async (admin) => {
          await api.post(apiPath`/v1/admin/orgs/${org.org_id}/users`, { ...admin, org_role: 'org_admin' });
          setDone(`${admin.email} is an administrator of ${org.org_name}. Sign out and sign in as ${admin.email}.`);
        }}
      />
      <p role="status">{done}</p>
    </section>
  );
}

function NewOrgForm({ api, onCreated }: { api: Api; onCreated: () => void }) {
  const [orgName, setOrgName] = useState('');
  const [created, setCreated] = useState('');
  return (
    <>
      <h2>New organisation</h2>
      <AdministratorFields
        label="New organisation"
        submit="Create organisation"
        before={
          <label>
            Organisation name
            <input required value={orgName} onInput={(e) => setOrgName((e.target as HTMLInputElement).value)} />
          </label>
        }
        onSubmit={async (admin) => {
          const org = await api.post<OrgRecord>('/v1/admin/orgs', { name: orgName });
          await api.post(apiPath`/v1/admin/orgs/${org.org_id}/users`, { ...admin, org_role: 'org_admin' });
          setOrgName('');
          setCreated(`Created ${org.org_name} with ${admin.email} as its administrator. Sign out and sign in as ${admin.email}.`);
          onCreated();
        }}
      />
      <p role="status">{created}</p>
    </>
  );
}

/**
 * An administrator's email, name and password. After a success every field is emptied: the
 * password never stays in the page (nor in a form the browser may offer to resubmit).
 */
function AdministratorFields(props: {
  label: string;
  submit: string;
  before?: ComponentChildren;
  onSubmit: (admin: { email: string; display_name: string; password: string }) => Promise<void>;
}) {
  const [email, setEmail] = useState('');
  const [displayName, setDisplayName] = useState('');
  const [password, setPassword] = useState('');
  return (
    <ActionForm
      label={props.label}
      onSubmit={async () => {
        await props.onSubmit({ email, display_name: displayName || email, password });
        setEmail('');
        setDisplayName('');
        setPassword('');
      }}
    >
      {props.before}
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
      <button type="submit">{props.submit}</button>
    </ActionForm>
  );
}
