import { useEffect, useRef, useState } from 'preact/hooks';
import { apiPath, ApiError } from '../api.ts';
import type { Workspace } from '../app.tsx';
import { ActionForm, ErrorMessage, Loading, formatTime, useLoad } from '../components/common.tsx';
import { consoleReturnAddress } from '../sso.tsx';

type ProviderType = 'oidc' | 'saml';

/** An account that wrote something, with its email as it was then. */
interface Author {
  user_id: string;
  email: string | null;
}

/** An identity provider as the API answers it (docs/sso.md "Providers"): the client secret is never in it. */
interface Provider {
  id: string;
  provider_type: ProviderType;
  display_name: string;
  enabled: boolean;
  status: 'enabled' | 'disabled' | 'pending_confirmation';
  default_role: 'org_admin' | 'org_member';
  link_existing_accounts: boolean;
  redirect_uris: string[];
  enable_requested_by: Author | null;
  created_by: Author | null;
  updated_by: Author | null;
  last_used_at: string | null;
  updated_at: string;
  oidc?: { issuer_url: string; client_id: string; scopes: string[]; client_secret_set: boolean; callback_url: string };
  saml?: { idp_metadata_url: string | null; idp_metadata_xml: string | null; name_id_format: string | null; sp_entity_id: string | null; acs_url: string; sp_metadata_url: string; idp_sso_url: string | null };
}

/** What the provider form holds, as typed. */
interface ProviderDraft {
  provider_type: ProviderType;
  display_name: string;
  enabled: boolean;
  default_role: 'org_admin' | 'org_member';
  link_existing_accounts: boolean;
  /** One address per line. */
  redirect_uris: string;
  issuer_url: string;
  client_id: string;
  /** Write-only: empty on an edit keeps the stored secret. */
  client_secret: string;
  /** Space- or comma-separated; empty for the API's default. */
  scopes: string;
  metadata_source: 'url' | 'xml';
  idp_metadata_url: string;
  idp_metadata_xml: string;
  name_id_format: string;
  sp_entity_id: string;
}

const who = (author: Author | null): string => author?.email ?? 'an unrecorded admin';

/** How the card describes the provider's state (docs/sso.md "Confirmation"). */
const STATUS_WORDS: Record<Provider['status'], string> = {
  enabled: '',
  disabled: ', disabled',
  pending_confirmation: ", waiting for a second admin's confirmation",
};

const words = (text: string): string[] => text.split(/[\s,]+/).filter((part) => part !== '');
const orNull = (text: string): string | null => (text.trim() === '' ? null : text.trim());

function draftOf(provider: Provider | undefined): ProviderDraft {
  return {
    provider_type: provider?.provider_type ?? 'oidc',
    display_name: provider?.display_name ?? '',
    enabled: provider?.enabled ?? true,
    default_role: provider?.default_role ?? 'org_member',
    link_existing_accounts: provider?.link_existing_accounts ?? true,
    redirect_uris: (provider?.redirect_uris ?? [consoleReturnAddress()]).join('\n'),
    issuer_url: provider?.oidc?.issuer_url ?? '',
    client_id: provider?.oidc?.client_id ?? '',
    client_secret: '',
    scopes: (provider?.oidc?.scopes ?? []).join(' '),
    metadata_source: provider?.saml?.idp_metadata_xml ? 'xml' : 'url',
    idp_metadata_url: provider?.saml?.idp_metadata_url ?? '',
    idp_metadata_xml: provider?.saml?.idp_metadata_xml ?? '',
    name_id_format: provider?.saml?.name_id_format ?? '',
    sp_entity_id: provider?.saml?.sp_entity_id ?? '',
  };
}

/** The request body of a create (with the type) or an update (the type cannot change; no secret keeps the stored one). */
function bodyOf(draft: ProviderDraft, creating: boolean): Record<string, unknown> {
  const body: Record<string, unknown> = {
    display_name: draft.display_name.trim(),
    enabled: draft.enabled,
    default_role: draft.default_role,
    link_existing_accounts: draft.link_existing_accounts,
    redirect_uris: draft.redirect_uris.split(/\r?\n/).map((line) => line.trim()).filter((line) => line !== ''),
  };
  if (creating) body.provider_type = draft.provider_type;
  if (draft.provider_type === 'oidc') {
    const scopes = words(draft.scopes);
    body.oidc = {
      issuer_url: draft.issuer_url.trim(),
      client_id: draft.client_id.trim(),
      ...(draft.client_secret === '' ? {} : { client_secret: draft.client_secret }),
      ...(scopes.length === 0 ? {} : { scopes }),
    };
  } else {
    body.saml = {
      idp_metadata_url: draft.metadata_source === 'url' ? orNull(draft.idp_metadata_url) : null,
      idp_metadata_xml: draft.metadata_source === 'xml' ? orNull(draft.idp_metadata_xml) : null,
      name_id_format: orNull(draft.name_id_format),
      sp_entity_id: orNull(draft.sp_entity_id),
    };
  }
  return body;
}

/** The API names fields as its body spells them; the form's labels are what people read. */
const FIELD_LABELS: Array<[string, string]> = [
  ['oidc.issuer_url', 'Issuer URL'],
  ['oidc.client_id', 'Client ID'],
  ['oidc.client_secret', 'Client secret'],
  ['oidc.scopes', 'Scopes'],
  ['saml.idp_metadata_url', 'IdP metadata URL'],
  ['saml.idp_metadata_xml', 'IdP metadata XML'],
  ['saml.name_id_format', 'NameID format'],
  ['saml.sp_entity_id', 'SP entity ID'],
  ['display_name', 'Display name'],
  ['redirect_uris', 'Redirect URIs'],
  ['saml needs exactly one of idp_metadata_url and idp_metadata_xml', 'SAML needs the IdP metadata, as an address or as XML'],
];

/** The API's refusal, in the form's words. */
function inFormWords(error: unknown): unknown {
  if (!(error instanceof ApiError)) return error;
  let message = error.message.replace(/redirect_uris\[(\d+)\]/g, (_, i: string) => `Redirect URI ${Number(i) + 1}`);
  for (const [field, label] of FIELD_LABELS) message = message.split(field).join(label);
  return new ApiError(error.status, error.code, message);
}

/**
 * The organisation's identity providers (docs/sso.md): the console sign-in link of each, and for
 * the org's admins, creating, editing and deleting them. A provider signs people into the
 * console only when the console's own address is among its redirect_uris; the page says when it
 * is not. Members may not read providers (the API answers 403), so they get an explanation.
 */
export function SingleSignOnPage({ workspace }: { workspace: Workspace }) {
  const { api, session } = workspace;
  const base = apiPath`/v1/management/orgs/${session.org_id}/auth-providers`;
  const isAdmin = workspace.org?.role === 'org_admin';
  const providers = useLoad(() => (isAdmin ? api.get<Provider[]>(base) : Promise.resolve([] as Provider[])), [base, isAdmin]);
  const [editing, setEditing] = useState<string | undefined>(undefined);
  const [deleting, setDeleting] = useState<Provider | undefined>(undefined);
  const [deleteError, setDeleteError] = useState<unknown>(undefined);
  const [done, setDone] = useState('');
  const confirmButton = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (deleting) confirmButton.current?.focus();
  }, [deleting]);
  const returnAddress = consoleReturnAddress();
  return (
    <section>
      <h1>Single sign-on</h1>
      <p class="muted">
        People of this organisation can sign in through an identity provider (OpenID Connect or SAML 2.0). To let them sign in to this console with one, its redirect URIs
        must include <code>{returnAddress}</code>. The organisation's sign-in page then offers it:
      </p>
      <p>
        Sign-in page: <code>{`${location.origin}/#/sign-in/${session.org_id}`}</code>
      </p>
      {!isAdmin && <p>Only the organisation's admins can see and manage its identity providers.</p>}
      <ErrorMessage error={providers.error} />
      {providers.loading && !providers.data && <Loading what="identity providers" />}
      {isAdmin && providers.data?.length === 0 && <p>This organisation has no identity provider.</p>}
      <p role="status">{done}</p>
      {(providers.data ?? []).map((provider) => {
        const link = `${location.origin}/#/sso/${provider.id}`;
        return (
          <article class="card" aria-label={provider.display_name}>
            <h2>{provider.display_name}</h2>
            <p class="muted">
              {provider.provider_type === 'oidc' ? 'OpenID Connect' : 'SAML 2.0'}
              {STATUS_WORDS[provider.status]} · new people join as {provider.default_role === 'org_admin' ? 'admins' : 'members'}
              {provider.link_existing_accounts ? ' · links existing members by email' : ''}
            </p>
            <p class="muted">
              Created by {who(provider.created_by)}, last changed by {who(provider.updated_by)} · {provider.last_used_at ? `last used ${formatTime(provider.last_used_at)}` : 'never used'}
            </p>
            {provider.status === 'pending_confirmation' && (
              <ConfirmProvider workspace={workspace} base={base} provider={provider} onDone={(message) => {
                setDone(message);
                providers.reload();
              }} />
            )}
            {provider.oidc && (
              <dl>
                <dt>Issuer</dt>
                <dd>
                  <code>{provider.oidc.issuer_url}</code>
                </dd>
                <dt>Client ID</dt>
                <dd>
                  <code>{provider.oidc.client_id}</code>
                </dd>
                <dt>Client secret</dt>
                <dd>{provider.oidc.client_secret_set ? 'stored (never shown)' : 'none stored'}</dd>
                <dt>Callback URL to register at the provider</dt>
                <dd>
                  <code>{provider.oidc.callback_url}</code>
                </dd>
              </dl>
            )}
            {provider.saml && (
              <dl>
                <dt>IdP metadata</dt>
                <dd>{provider.saml.idp_metadata_url ? <code>{provider.saml.idp_metadata_url}</code> : 'given as XML'}</dd>
                <dt>Where sign-in sends people (the IdP's sign-in address)</dt>
                <dd>{provider.saml.idp_sso_url ? <code>{provider.saml.idp_sso_url}</code> : 'read from the metadata address at each sign-in'}</dd>
                <dt>ACS URL</dt>
                <dd>
                  <code>{provider.saml.acs_url}</code>
                </dd>
                <dt>SP metadata</dt>
                <dd>
                  <code>{provider.saml.sp_metadata_url}</code>
                </dd>
              </dl>
            )}
            <p>
              {provider.redirect_uris.includes(returnAddress) ? (
                <>
                  Console sign-in link: <code>{link}</code>
                </>
              ) : (
                <span class="error">Not usable from the console: its redirect URIs do not include {returnAddress}.</span>
              )}
            </p>
            {editing === provider.id ? (
              <ProviderForm
                workspace={workspace}
                base={base}
                provider={provider}
                onDone={(message) => {
                  setEditing(undefined);
                  setDone(message);
                  providers.reload();
                }}
                onCancel={() => setEditing(undefined)}
              />
            ) : (
              <div class="row">
                <button
                  type="button"
                  onClick={() => {
                    setEditing(provider.id);
                    setDone('');
                  }}
                >
                  Edit {provider.display_name}
                </button>
                <button
                  type="button"
                  class="danger"
                  onClick={() => {
                    setDeleting(provider);
                    setDeleteError(undefined);
                    setDone('');
                  }}
                >
                  Delete {provider.display_name}
                </button>
              </div>
            )}
            {deleting?.id === provider.id && (
              <div class="confirm" role="alertdialog" aria-labelledby={`delete-${provider.id}`}>
                <p id={`delete-${provider.id}`}>
                  Delete the identity provider <strong>{provider.display_name}</strong>? Nobody can sign in with it any more, and the sessions it opened end; the accounts stay.
                </p>
                <button
                  type="button"
                  class="danger"
                  ref={confirmButton}
                  onClick={async () => {
                    setDeleteError(undefined);
                    try {
                      await api.delete(`${base}/${encodeURIComponent(provider.id)}`);
                      setDeleting(undefined);
                      setDone(`${provider.display_name} deleted.`);
                      providers.reload();
                    } catch (error) {
                      setDeleteError(error);
                    }
                  }}
                >
                  Yes, delete {provider.display_name}
                </button>{' '}
                <button type="button" onClick={() => setDeleting(undefined)}>
                  Keep it
                </button>
                <ErrorMessage error={deleteError} />
              </div>
            )}
          </article>
        );
      })}
      {isAdmin && (
        <>
          <h2>New identity provider</h2>
          <ProviderForm
            workspace={workspace}
            base={base}
            onDone={(message) => {
              setDone(message);
              providers.reload();
            }}
          />
        </>
      )}
    </section>
  );
}

/**
 * A provider enabled by one admin waits for another's confirmation: the admin who asked is told
 * so; any other admin confirms what the card shows (its `updated_at`, so a later change is refused).
 */
function ConfirmProvider({ workspace, base, provider, onDone }: { workspace: Workspace; base: string; provider: Provider; onDone: (message: string) => void }) {
  const { api, session } = workspace;
  const [error, setError] = useState<unknown>(undefined);
  if (provider.enable_requested_by?.user_id === session.user_id) {
    return <p>You enabled it: another admin of the organisation must confirm before anyone can sign in with it.</p>;
  }
  return (
    <div class="row">
      <p>{who(provider.enable_requested_by)} enabled it; it works once another admin confirms. Check its settings first.</p>
      <button
        type="button"
        onClick={async () => {
          setError(undefined);
          try {
            await api.post(`${base}/${encodeURIComponent(provider.id)}/confirm`, { updated_at: provider.updated_at });
            onDone(`${provider.display_name} confirmed.`);
          } catch (failure) {
            setError(failure);
          }
        }}
      >
        Confirm {provider.display_name}
      </button>
      <ErrorMessage error={error} />
    </div>
  );
}

/** Creates a provider (no `provider`) or edits one; the API's refusals are shown under the form. */
function ProviderForm({ workspace, base, provider, onDone, onCancel }: { workspace: Workspace; base: string; provider?: Provider; onDone: (message: string) => void; onCancel?: () => void }) {
  const { api } = workspace;
  const creating = provider === undefined;
  const [draft, setDraft] = useState<ProviderDraft>(() => draftOf(provider));
  const set = (change: Partial<ProviderDraft>) => setDraft((previous) => ({ ...previous, ...change }));
  const text = (field: keyof ProviderDraft) => (event: Event) => set({ [field]: (event.target as HTMLInputElement | HTMLTextAreaElement).value });
  const label = creating ? 'New identity provider' : `Edit ${provider.display_name}`;
  // The Edit button gives way to this form: the focus moves into it, so a keyboard user is not lost.
  const firstField = useRef<HTMLInputElement>(null);
  useEffect(() => {
    if (!creating) firstField.current?.focus();
  }, []);
  return (
    <ActionForm
      label={label}
      onSubmit={async () => {
        const body = bodyOf(draft, creating);
        try {
          if (creating) {
            const made = await api.post<Provider>(base, body);
            setDraft(draftOf(undefined));
            onDone(`${made.display_name} created.`);
          } else {
            const saved = await api.put<Provider>(`${base}/${encodeURIComponent(provider.id)}`, body);
            onDone(`${saved.display_name} saved.`);
          }
        } catch (error) {
          throw inFormWords(error);
        }
      }}
    >
      {creating ? (
        <label>
          Protocol
          <select value={draft.provider_type} onChange={(e) => set({ provider_type: (e.target as HTMLSelectElement).value as ProviderType })}>
            <option value="oidc">OpenID Connect</option>
            <option value="saml">SAML 2.0</option>
          </select>
        </label>
      ) : (
        <p class="muted">Protocol: {provider.provider_type === 'oidc' ? 'OpenID Connect' : 'SAML 2.0'} (it cannot change; create another provider instead).</p>
      )}
      <label>
        Display name
        <input ref={firstField} required maxLength={200} value={draft.display_name} onInput={text('display_name')} />
      </label>
      <label>
        <input type="checkbox" checked={draft.enabled} onChange={(e) => set({ enabled: (e.target as HTMLInputElement).checked })} />
        Enabled (offered on the sign-in page)
      </label>
      <label>
        People signing in for the first time join as
        <select value={draft.default_role} onChange={(e) => set({ default_role: (e.target as HTMLSelectElement).value as ProviderDraft['default_role'] })}>
          <option value="org_member">member</option>
          <option value="org_admin">admin</option>
        </select>
      </label>
      <label>
        <input type="checkbox" checked={draft.link_existing_accounts} onChange={(e) => set({ link_existing_accounts: (e.target as HTMLInputElement).checked })} />
        Link existing members by email (the provider can then sign in as any member whose address it asserts)
      </label>
      <p class="muted">When the organisation has more than one admin, enabling a provider that makes admins or links existing members needs a second admin's confirmation.</p>
      <label>
        Redirect URIs (one per line; where a sign-in may return)
        <textarea class="wide" rows={2} required value={draft.redirect_uris} onInput={text('redirect_uris')} />
      </label>
      {draft.provider_type === 'oidc' ? (
        <>
          <label>
            Issuer URL
            <input type="url" required class="wide" placeholder="https://login.example.com" value={draft.issuer_url} onInput={text('issuer_url')} />
          </label>
          <label>
            Client ID
            <input required value={draft.client_id} onInput={text('client_id')} />
          </label>
          <label>
            {creating ? 'Client secret' : 'New client secret (leave empty to keep the stored one; required again after a change of issuer or client)'}
            <input type="password" autoComplete="new-password" required={creating} value={draft.client_secret} onInput={text('client_secret')} />
          </label>
          <label>
            Scopes (separated by spaces; empty for openid, email and profile)
            <input value={draft.scopes} onInput={text('scopes')} />
          </label>
        </>
      ) : (
        <>
          <fieldset>
            <legend>IdP metadata, from</legend>
            <label>
              <input type="radio" name={`metadata-${provider?.id ?? 'new'}`} checked={draft.metadata_source === 'url'} onChange={() => set({ metadata_source: 'url' })} />
              its address
            </label>
            <label>
              <input type="radio" name={`metadata-${provider?.id ?? 'new'}`} checked={draft.metadata_source === 'xml'} onChange={() => set({ metadata_source: 'xml' })} />
              the XML itself
            </label>
          </fieldset>
          {draft.metadata_source === 'url' ? (
            <label>
              IdP metadata URL
              <input type="url" required class="wide" value={draft.idp_metadata_url} onInput={text('idp_metadata_url')} />
            </label>
          ) : (
            <label>
              IdP metadata XML (holds the IdP's entity ID, sign-in address and signing certificate)
              <textarea class="wide" rows={6} required value={draft.idp_metadata_xml} onInput={text('idp_metadata_xml')} />
            </label>
          )}
          <label>
            NameID format (optional)
            <input class="wide" placeholder="urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress" value={draft.name_id_format} onInput={text('name_id_format')} />
          </label>
          <label>
            SP entity ID (optional; the server's own by default)
            <input class="wide" value={draft.sp_entity_id} onInput={text('sp_entity_id')} />
          </label>
        </>
      )}
      <div class="row">
        <button type="submit">{creating ? 'Create identity provider' : `Save ${provider.display_name}`}</button>
        {onCancel && (
          <button type="button" onClick={onCancel}>
            Cancel
          </button>
        )}
      </div>
    </ActionForm>
  );
}
