import { apiPath } from '../api.ts';
import { useState } from 'preact/hooks';
import type { EnvironmentPageProps } from '../app.tsx';
import { ActionForm, ErrorMessage, Loading, formatTime, useLoad } from '../components/common.tsx';
import type { SdkKey } from '../records.ts';

export function SdkKeysPage({ workspace, environment }: EnvironmentPageProps) {
  const { api } = workspace;
  const base = apiPath`/v1/management/environments/${environment.environment_id}/sdk-keys`;
  const keys = useLoad(() => api.get<SdkKey[]>(base), [base]);
  const [created, setCreated] = useState<SdkKey | undefined>(undefined);
  const [copied, setCopied] = useState('');
  const [revoking, setRevoking] = useState<SdkKey | undefined>(undefined);
  const [revokeError, setRevokeError] = useState<unknown>(undefined);
  const list = keys.data ?? [];
  return (
    <section>
      <h1>SDK keys of {environment.environment_name}</h1>
      <p class="muted">
        An SDK key lets a server-side SDK or the evaluate route read this environment's flags. A key is shown once, when it is created; only a hash is kept. The last active key of an
        environment cannot be revoked, so that SDKs in service never lose access by accident: create the new key, roll it out, then revoke the old one.
      </p>
      <ErrorMessage error={keys.error} />
      {keys.loading && !keys.data && <Loading what="SDK keys" />}
      {created?.raw_key && (
        <div class="notice" role="status">
          <p>
            New key created. Copy it now: it will not be shown again.
          </p>
          <p>
            <code data-testid="new-sdk-key">{created.raw_key}</code>{' '}
            <button
              type="button"
              onClick={async () => {
                try {
                  await navigator.clipboard.writeText(created.raw_key!);
                  setCopied('Copied to the clipboard.');
                } catch {
                  setCopied('Your browser did not allow copying: select the key and copy it yourself.');
                }
              }}
            >
              Copy key
            </button>{' '}
            <span>{copied}</span>
          </p>
        </div>
      )}
      <table class="list">
        <thead>
          <tr>
            <th scope="col">Key</th>
            <th scope="col">Created</th>
            <th scope="col">
              <span class="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {list.map((key) => (
            <tr>
              <td>
                <code>{key.key_prefix}…</code>
              </td>
              <td>{formatTime(key.created_at)}</td>
              <td>
                <button type="button" class="danger" disabled={list.length === 1} title={list.length === 1 ? 'The last key cannot be revoked' : undefined} onClick={() => setRevoking(key)}>
                  Revoke {key.key_prefix}…
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {revoking && (
        <div class="confirm" role="alertdialog" aria-labelledby="revoke-title">
          <p id="revoke-title">
            Revoke <code>{revoking.key_prefix}…</code>? SDKs using it stop working at once, on every server.
          </p>
          <button
            type="button"
            class="danger"
            onClick={async () => {
              setRevokeError(undefined);
              try {
                await api.delete(`${base}/${encodeURIComponent(revoking.sdk_key_id)}`);
                setRevoking(undefined);
                keys.reload();
              } catch (error) {
                setRevokeError(error);
              }
            }}
          >
            Yes, revoke it
          </button>{' '}
          <button type="button" onClick={() => setRevoking(undefined)}>
            Keep it
          </button>
          <ErrorMessage error={revokeError} />
        </div>
      )}
      <ActionForm
        label="New SDK key"
        onSubmit={async () => {
          setCopied('');
          setCreated(await api.post<SdkKey>(base));
          keys.reload();
        }}
      >
        <button type="submit">Create an SDK key</button>
      </ActionForm>
    </section>
  );
}
