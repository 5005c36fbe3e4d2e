import { apiPath } from '../api.ts';
import { useState } from 'preact/hooks';
import type { EnvironmentPageProps } from '../app.tsx';
import { ActionForm, ConfirmDialog, ErrorMessage, Loading, formatTime, useLoad } from '../components/common.tsx';
import { ClientKeyFields, EMPTY_CLIENT_KEY, changesOf, createBodyOf, draftOf, type ClientKeyDraft } from '../components/client-key-form.tsx';
import { CopyButton } from '../components/copy-button.tsx';
import { ShownOnce } from '../components/shown-once.tsx';
import { SigningSecrets } from '../components/signing-secrets.tsx';
import type { SdkKey } from '../records.ts';

/**
 * An environment's keys (docs/client-side.md "Keys"): server keys for server-side SDKs, client
 * keys for browsers and apps with their settings; create either, edit a client key's settings,
 * revoke. Below them, the environment's context signing secrets.
 */
export function SdkKeysPage({ workspace, environment }: EnvironmentPageProps) {
  const { api } = workspace;
  const base = apiPath`/v1/management/environments/${environment.environment_id}/sdk-keys`;
  const keys = useLoad(() => api.get<SdkKey[]>(base), [base]);
  const [created, setCreated] = useState<SdkKey | undefined>(undefined);
  const [revoking, setRevoking] = useState<SdkKey | undefined>(undefined);
  const [editing, setEditing] = useState<SdkKey | undefined>(undefined);
  const [saved, setSaved] = useState('');
  const [newClient, setNewClient] = useState<ClientKeyDraft>(EMPTY_CLIENT_KEY);
  const list = keys.data ?? [];
  // The last active server key cannot be revoked (SDKs in service would lose access); client keys always can.
  const serverKeys = list.filter((key) => key.kind !== 'client').length;
  const lastServerKey = (key: SdkKey) => key.kind !== 'client' && serverKeys === 1;
  const keyPath = (key: SdkKey) => apiPath`/v1/management/environments/${environment.environment_id}/sdk-keys/${key.sdk_key_id}`;
  return (
    <section>
      <h1>SDK keys of {environment.environment_name}</h1>
      <p>
        Environment id <code data-testid="sdk-keys-environment-id">{environment.environment_id}</code> <CopyButton value={environment.environment_id} label="Copy environment id" />
      </p>
      <p class="muted">
        A <strong>server key</strong> lets a server-side SDK or the evaluate route read all of this environment's flags: keep it on your servers. A <strong>client key</strong> goes into a
        web page or an app: it evaluates only the flags marked visible to client keys, through OFREP, from the origins you list, and never sees rules or segments. A key is shown once,
        when it is created; only a hash is kept. The last active server key of an environment cannot be revoked, so that SDKs in service never lose access by accident: create the new
        key, roll it out, then revoke the old one.
      </p>
      <ErrorMessage error={keys.error} />
      {keys.loading && !keys.data && <Loading what="SDK keys" />}
      {created?.raw_key && (
        <ShownOnce key={created.sdk_key_id} value={created.raw_key} testId="new-sdk-key" copyLabel="Copy key">
          <p>New {created.kind === 'client' ? 'client' : 'server'} key created. Copy it now: it will not be shown again.</p>
        </ShownOnce>
      )}
      <table class="list" aria-label="SDK keys">
        <thead>
          <tr>
            <th scope="col">Key</th>
            <th scope="col">Kind</th>
            <th scope="col">Settings</th>
            <th scope="col">Created</th>
            <th scope="col">Last used</th>
            <th scope="col">
              <span class="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {list.map((key) => (
            <tr data-testid={`sdk-key-${key.key_prefix}`}>
              <td>
                <code>{key.key_prefix}…</code>
                {key.name !== '' && (
                  <>
                    <br />
                    {key.name}
                  </>
                )}
              </td>
              <td class="nowrap">{key.kind === 'client' ? 'client' : 'server'}</td>
              <td>{key.kind === 'client' ? <ClientSettings sdkKey={key} /> : <span class="muted">every flag, server-side</span>}</td>
              <td>{formatTime(key.created_at)}</td>
              <td>{typeof key.last_used_at_ms === 'number' ? formatTime(key.last_used_at_ms) : <span class="muted">never</span>}</td>
              <td>
                <div class="row">
                  {key.kind === 'client' && (
                    <button
                      type="button"
                      onClick={() => {
                        setSaved('');
                        setEditing(key);
                      }}
                    >
                      Edit {key.key_prefix}…
                    </button>
                  )}
                  <button
                    type="button"
                    class="danger"
                    disabled={lastServerKey(key)}
                    title={lastServerKey(key) ? 'The last server key cannot be revoked' : undefined}
                    onClick={() => {
                      setRevoking(key);
                    }}
                  >
                    Revoke {key.key_prefix}…
                  </button>
                </div>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <p role="status">{saved}</p>
      {revoking && (
        <ConfirmDialog
          key={revoking.sdk_key_id}
          titleId="revoke-title"
          question={
            <>
              Revoke <code>{revoking.key_prefix}…</code>? {revoking.kind === 'client' ? 'Pages and apps' : 'SDKs'} using it stop working at once, on every server.
            </>
          }
          confirmLabel="Yes, revoke it"
          onConfirm={async () => {
            await api.delete(keyPath(revoking));
            if (editing?.sdk_key_id === revoking.sdk_key_id) setEditing(undefined);
            setRevoking(undefined);
            keys.reload();
          }}
          onCancel={() => setRevoking(undefined)}
        />
      )}
      {editing && (
        <EditClientKey
          key={editing.sdk_key_id}
          sdkKey={editing}
          onSave={async (changes) => {
            const updated = await api.patch<SdkKey>(keyPath(editing), changes);
            keys.set((previous) => (previous ?? []).map((key) => (key.sdk_key_id === updated.sdk_key_id ? updated : key)));
            setEditing(undefined);
            setSaved(`Settings of ${updated.key_prefix}… saved.`);
          }}
          onCancel={() => setEditing(undefined)}
        />
      )}
      <h2>New server key</h2>
      <ActionForm
        label="New server key"
        onSubmit={async () => {
          setCreated(await api.post<SdkKey>(base));
          keys.reload();
        }}
      >
        <button type="submit">Create a server key</button>
      </ActionForm>
      <h2>New client key</h2>
      <ActionForm
        label="New client key"
        onSubmit={async () => {
          setCreated(await api.post<SdkKey>(base, createBodyOf(newClient)));
          setNewClient(EMPTY_CLIENT_KEY);
          keys.reload();
        }}
      >
        <ClientKeyFields draft={newClient} onChange={setNewClient} />
        <div class="row">
          <button type="submit">Create a client key</button>
        </div>
      </ActionForm>
      <SigningSecrets api={api} environmentId={environment.environment_id} />
    </section>
  );
}

const SIGNING_SHOWN: Record<string, string> = { off: 'off', key: 'key (the targeting key is signed)', context: 'context (the key and vouched attributes are signed)' };
const signingLabel = (mode: string) => SIGNING_SHOWN[mode] ?? mode;

/** A client key's settings in the list. */
function ClientSettings({ sdkKey }: { sdkKey: SdkKey }) {
  const expired = sdkKey.expires_at_ms !== null && sdkKey.expires_at_ms <= Date.now();
  return (
    <dl>
      <dt>Origins</dt>
      <dd>
        {sdkKey.allowed_origins.length === 0
          ? 'none'
          : sdkKey.allowed_origins.map((origin, i) => (
              <>
                {i > 0 && <br />}
                <code>{origin}</code>
              </>
            ))}
      </dd>
      <dt>Without an Origin</dt>
      <dd>{sdkKey.allow_missing_origin ? 'allowed (native apps)' : 'refused'}</dd>
      <dt>Context signing</dt>
      <dd>{signingLabel(sdkKey.context_signing)}</dd>
      <dt>Disabled flags</dt>
      <dd>{sdkKey.include_disabled ? 'included' : 'left out'}</dd>
      <dt>Expires</dt>
      <dd>{sdkKey.expires_at_ms === null ? 'never' : `${formatTime(sdkKey.expires_at_ms)}${expired ? ' (expired)' : ''}`}</dd>
    </dl>
  );
}

/** A client key's settings form; saving sends only what changed. */
function EditClientKey({ sdkKey, onSave, onCancel }: { sdkKey: SdkKey; onSave: (changes: ReturnType<typeof changesOf>) => Promise<void>; onCancel: () => void }) {
  const [draft, setDraft] = useState<ClientKeyDraft>(() => draftOf(sdkKey));
  const [unchanged, setUnchanged] = useState(false);
  return (
    <div class="card">
      <h2>Edit client key {sdkKey.key_prefix}…</h2>
      <ActionForm
        label={`Settings of ${sdkKey.key_prefix}…`}
        onSubmit={async () => {
          const changes = changesOf(sdkKey, draft);
          if (Object.keys(changes).length === 0) {
            setUnchanged(true);
            return;
          }
          await onSave(changes);
        }}
      >
        <ClientKeyFields
          draft={draft}
          onChange={(update) => {
            setUnchanged(false);
            setDraft(update);
          }}
        />
        <div class="row">
          <button type="submit">Save key settings</button>
          <button type="button" onClick={onCancel}>
            Cancel
          </button>
        </div>
        {unchanged && <p role="status">Nothing changed.</p>}
      </ActionForm>
    </div>
  );
}
