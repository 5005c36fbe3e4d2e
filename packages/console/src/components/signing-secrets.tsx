import { useState } from 'preact/hooks';
import { apiPath, type Api } from '../api.ts';
import type { ContextSigningSecret } from '../records.ts';
import { ActionForm, ConfirmDialog, ErrorMessage, Loading, formatTime, useLoad } from './common.tsx';
import { ShownOnce } from './shown-once.tsx';

/**
 * An environment's context signing secrets (docs/client-side.md "Signed contexts"): the customer's
 * backend signs context tokens with one, naming its `kid`; client keys whose context signing is
 * not off accept only tokens signed with a secret listed here. A secret is shown once, when
 * created; several at a time let a backend move to a new one before the old one is deleted.
 */
export function SigningSecrets({ api, environmentId }: { api: Api; environmentId: string }) {
  const base = apiPath`/v1/management/environments/${environmentId}/context-signing-secrets`;
  const secrets = useLoad(() => api.get<ContextSigningSecret[]>(base), [base]);
  const [created, setCreated] = useState<ContextSigningSecret | undefined>(undefined);
  const [deleting, setDeleting] = useState<string | undefined>(undefined);
  const list = secrets.data ?? [];
  return (
    <>
      <h2>Context signing secrets</h2>
      <p class="muted">
        With a client key whose context signing is <em>key</em> or <em>context</em>, a browser or app is evaluated only for a context your backend signed: a token (HS256) signed with
        one of these secrets, its <code>kid</code> header naming which. A secret is shown once, when it is created. To rotate, create a new one, give it to your backend, then delete the
        old one: tokens signed with a deleted secret are refused at once.
      </p>
      {created?.secret && (
        <ShownOnce key={created.kid} value={created.secret} testId="new-signing-secret" copyLabel="Copy secret">
          <p>
            New signing secret <code data-testid="new-signing-secret-kid">{created.kid}</code> created. Copy it now into your backend's configuration (with its kid): it will not be shown
            again.
          </p>
        </ShownOnce>
      )}
      <ErrorMessage error={secrets.error} />
      {secrets.loading && !secrets.data && <Loading what="signing secrets" />}
      {secrets.data && list.length === 0 && <p>No signing secret yet.</p>}
      {list.length > 0 && (
        <table class="list" aria-label="Context signing secrets">
          <thead>
            <tr>
              <th scope="col">Kid</th>
              <th scope="col">Created</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {list.map((secret) => (
              <tr>
                <td>
                  <code>{secret.kid}</code>
                </td>
                <td>{formatTime(secret.created_at_ms ?? secret.created_at ?? '')}</td>
                <td>
                  <button
                    type="button"
                    class="danger"
                    onClick={() => {
                      setDeleting(secret.kid);
                    }}
                  >
                    Delete secret {secret.kid}
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {deleting !== undefined && (
        <ConfirmDialog
          key={deleting}
          titleId="delete-secret-title"
          question={
            <>
              Delete signing secret <code>{deleting}</code>? Context tokens signed with it are refused at once.
            </>
          }
          confirmLabel="Yes, delete it"
          onConfirm={async () => {
            await api.delete(apiPath`/v1/management/environments/${environmentId}/context-signing-secrets/${deleting}`);
            if (created?.kid === deleting) setCreated(undefined);
            setDeleting(undefined);
            secrets.reload();
          }}
          onCancel={() => setDeleting(undefined)}
        />
      )}
      <ActionForm
        label="New signing secret"
        onSubmit={async () => {
          setCreated(await api.post<ContextSigningSecret>(base));
          secrets.reload();
        }}
      >
        <button type="submit">Create a signing secret</button>
      </ActionForm>
    </>
  );
}
