import { useState } from 'preact/hooks';
import { apiPath } from '../api.ts';
import type { Workspace } from '../app.tsx';
import { ActionForm, ConfirmDialog, ErrorMessage, Loading, formatTime, useLoad } from '../components/common.tsx';
import { ShownOnce } from '../components/shown-once.tsx';
import type { WebhookDeliveryRecord, WebhookRecord } from '../records.ts';

interface Draft {
  name: string;
  url: string;
  /** Globs, comma- or space-separated. */
  eventTypes: string;
  environmentIds: string[];
  format: 'standard' | 'slack';
}

const EMPTY: Draft = { name: '', url: '', eventTypes: 'flag.*', environmentIds: [], format: 'standard' };
const draftOf = (hook: WebhookRecord): Draft => ({ name: hook.name, url: hook.url, eventTypes: hook.event_types.join(', '), environmentIds: hook.filters.environment_ids, format: hook.format });
const bodyOf = (draft: Draft) => ({
  name: draft.name.trim(),
  url: draft.url.trim(),
  event_types: draft.eventTypes.split(/[\s,]+/).filter((glob) => glob !== ''),
  filters: { environment_ids: draft.environmentIds },
  format: draft.format,
});
const toggled = (list: string[], id: string, on: boolean) => (on ? [...list.filter((x) => x !== id), id] : list.filter((x) => x !== id));

/**
 * The org's webhooks (docs/workflow.md "Webhooks"; org admins): endpoints told of every change
 * whose action matches their patterns, signed with a secret shown once. Edit, enable or disable,
 * rotate the secret, send a test message (which enables a disabled endpoint again), and read an
 * endpoint's delivery log, sending a delivery again.
 */
export function WebhooksPage({ workspace }: { workspace: Workspace }) {
  const { api, session, projects, environments } = workspace;
  const base = apiPath`/v1/management/orgs/${session.org_id}/webhooks`;
  const hooks = useLoad(() => api.get<WebhookRecord[]>(base), [base]);
  const [draft, setDraft] = useState<Draft>(EMPTY);
  const [editing, setEditing] = useState<WebhookRecord | undefined>(undefined);
  const [secret, setSecret] = useState<{ id: string; name: string; value: string } | undefined>(undefined);
  const [deleting, setDeleting] = useState<WebhookRecord | undefined>(undefined);
  const [logOf, setLogOf] = useState<WebhookRecord | undefined>(undefined);
  const [done, setDone] = useState('');
  const [error, setError] = useState<unknown>(undefined);
  const update = (changes: Partial<Draft>) => setDraft((previous) => ({ ...previous, ...changes }));
  const hookPath = (hook: WebhookRecord, rest = '') => `${apiPath`/v1/management/orgs/${session.org_id}/webhooks/${hook.id}`}${rest}`;
  const act = async (work: () => Promise<string>) => {
    setError(undefined);
    try {
      setDone(await work());
      hooks.reload();
    } catch (failure) {
      setError(failure);
    }
  };
  return (
    <section>
      <h1>Webhooks</h1>
      <p class="muted">
        A webhook tells another system (chat, ticketing, a security log) of every change whose action matches its patterns, e.g. <code>flag.*</code>. Each message is signed
        (Standard Webhooks); the secret is shown once. Failed deliveries are retried for about three days; an endpoint that answers 410 or fails 20 times in a row is disabled
        until a test message gets through.
      </p>
      <ErrorMessage error={hooks.error ?? error} />
      {hooks.loading && !hooks.data && <Loading what="webhooks" />}
      {secret && (
        <ShownOnce key={secret.id + secret.value} value={secret.value} testId="new-webhook-secret" copyLabel="Copy secret">
          <p>Signing secret of {secret.name}. Copy it now: it will not be shown again.</p>
        </ShownOnce>
      )}
      <table class="list" aria-label="Webhooks">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Events</th>
            <th scope="col">State</th>
            <th scope="col">
              <span class="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {(hooks.data ?? []).map((hook) => (
            <tr data-testid="webhook-row">
              <td>
                {hook.name}
                <br />
                <code>{hook.url}</code>
                {hook.format === 'slack' && <span class="muted"> (Slack)</span>}
              </td>
              <td>{hook.event_types.join(', ')}</td>
              <td>
                {hook.enabled ? 'enabled' : `disabled${hook.disabled_reason ? `: ${hook.disabled_reason}` : ''}`}
                {hook.consecutive_failures > 0 && <span class="muted"> ({hook.consecutive_failures} failures in a row)</span>}
              </td>
              <td>
                <button type="button" onClick={() => { setEditing(hook); setDraft(draftOf(hook)); }}>Edit {hook.name}</button>{' '}
                <button type="button" onClick={() => act(async () => { await api.patch(hookPath(hook), { enabled: !hook.enabled }); return `${hook.name} ${hook.enabled ? 'disabled' : 'enabled'}.`; })}>
                  {hook.enabled ? 'Disable' : 'Enable'} {hook.name}
                </button>{' '}
                <button
                  type="button"
                  onClick={() =>
                    act(async () => {
                      const sent = await api.post<WebhookDeliveryRecord>(hookPath(hook, '/test'));
                      return sent.status === 'delivered' ? `Test message delivered to ${hook.name} (${sent.status_code}).` : `Test message to ${hook.name} failed: ${sent.error ?? sent.status_code}.`;
                    })
                  }
                >
                  Send test to {hook.name}
                </button>{' '}
                <button
                  type="button"
                  onClick={() =>
                    act(async () => {
                      const rotated = await api.post<WebhookRecord>(hookPath(hook, '/rotate-secret'));
                      setSecret({ id: hook.id, name: hook.name, value: rotated.secret ?? '' });
                      return `New secret for ${hook.name}; the previous one keeps signing for 24 hours.`;
                    })
                  }
                >
                  Rotate secret of {hook.name}
                </button>{' '}
                <button type="button" onClick={() => setLogOf(hook)}>Deliveries of {hook.name}</button>{' '}
                <button type="button" class="danger" onClick={() => setDeleting(hook)}>Delete {hook.name}</button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {hooks.data?.length === 0 && <p>No webhook yet.</p>}
      <p role="status">{done}</p>
      {deleting && (
        <ConfirmDialog
          key={deleting.id}
          titleId="delete-webhook-title"
          question={<>Delete the webhook {deleting.name} and its delivery log?</>}
          confirmLabel="Yes, delete it"
          onConfirm={async () => {
            await api.delete(hookPath(deleting));
            setDone(`Webhook ${deleting.name} deleted.`);
            if (logOf?.id === deleting.id) setLogOf(undefined);
            setDeleting(undefined);
            hooks.reload();
          }}
          onCancel={() => setDeleting(undefined)}
        />
      )}
      {logOf && <DeliveryLog key={logOf.id} workspace={workspace} hook={logOf} path={hookPath(logOf)} />}
      <h2>{editing ? `Edit ${editing.name}` : 'New webhook'}</h2>
      <ActionForm
        label={editing ? 'Edit webhook' : 'New webhook'}
        onSubmit={async () => {
          if (editing) {
            await api.patch(hookPath(editing), bodyOf(draft));
            setDone(`Webhook ${draft.name} saved.`);
            setEditing(undefined);
          } else {
            const made = await api.post<WebhookRecord>(base, bodyOf(draft));
            setSecret({ id: made.id, name: made.name, value: made.secret ?? '' });
            setDone('');
          }
          setDraft(EMPTY);
          hooks.reload();
        }}
      >
        <label>
          Name
          <input required maxLength={100} value={draft.name} onInput={(e) => update({ name: (e.target as HTMLInputElement).value })} />
        </label>
        <label>
          URL
          <input required type="url" maxLength={2048} placeholder="https://hooks.example.com/switchyard" value={draft.url} onInput={(e) => update({ url: (e.target as HTMLInputElement).value })} />
        </label>
        <label>
          Events (patterns, comma-separated)
          <input required value={draft.eventTypes} onInput={(e) => update({ eventTypes: (e.target as HTMLInputElement).value })} />
        </label>
        <label>
          Format
          <select value={draft.format} onChange={(e) => update({ format: (e.target as HTMLSelectElement).value as Draft['format'] })}>
            <option value="standard">Standard Webhooks (JSON)</option>
            <option value="slack">Slack message</option>
          </select>
        </label>
        <fieldset>
          <legend>Only these environments (none checked: all)</legend>
          {projects.map((p) =>
            environments
              .filter((e) => e.project_id === p.project_id)
              .map((e) => (
                <label>
                  <input
                    type="checkbox"
                    aria-label={`${p.project_name} / ${e.environment_name}`}
                    checked={draft.environmentIds.includes(e.environment_id)}
                    onChange={(event) => update({ environmentIds: toggled(draft.environmentIds, e.environment_id, (event.target as HTMLInputElement).checked) })}
                  />
                  {p.project_name} / {e.environment_name}
                </label>
              )),
          )}
        </fieldset>
        <div class="row">
          <button type="submit">{editing ? 'Save the webhook' : 'Create the webhook'}</button>
          {editing && (
            <button type="button" onClick={() => { setEditing(undefined); setDraft(EMPTY); }}>
              Cancel
            </button>
          )}
        </div>
      </ActionForm>
    </section>
  );
}

/** An endpoint's delivery log, newest first, with "send again" per delivery. */
function DeliveryLog({ workspace, hook, path }: { workspace: Workspace; hook: WebhookRecord; path: string }) {
  const { api } = workspace;
  const log = useLoad(() => api.get<{ deliveries: WebhookDeliveryRecord[]; next_cursor: string | null }>(`${path}/deliveries?limit=50`), [path]);
  const [error, setError] = useState<unknown>(undefined);
  return (
    <section aria-label={`Deliveries of ${hook.name}`}>
      <h2>Deliveries of {hook.name}</h2>
      <ErrorMessage error={log.error ?? error} />
      {log.loading && !log.data && <Loading what="deliveries" />}
      <table class="list" aria-label={`Delivery log of ${hook.name}`}>
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Event</th>
            <th scope="col">Status</th>
            <th scope="col">Answer</th>
            <th scope="col">
              <span class="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {(log.data?.deliveries ?? []).map((delivery) => (
            <tr data-testid="webhook-delivery-row">
              <td>{formatTime(delivery.created_at_ms)}</td>
              <td>
                {delivery.event_type}
                <br />
                <code>{delivery.message_id}</code>
              </td>
              <td>
                {delivery.status} after {delivery.attempts} attempt{delivery.attempts === 1 ? '' : 's'}
                {delivery.next_attempt_at_ms !== undefined && <span class="muted"> (next {formatTime(delivery.next_attempt_at_ms)})</span>}
              </td>
              <td>
                {delivery.status_code ?? '—'} {delivery.duration_ms !== undefined && <span class="muted">{delivery.duration_ms} ms</span>}
                {delivery.error && <div class="error">{delivery.error}</div>}
                {delivery.response && <pre class="command">{delivery.response}</pre>}
              </td>
              <td>
                <button
                  type="button"
                  disabled={delivery.status === 'sending'}
                  onClick={async () => {
                    setError(undefined);
                    try {
                      await api.post(`${path}/deliveries/${encodeURIComponent(delivery.id)}/redeliver`);
                      log.reload();
                    } catch (failure) {
                      setError(failure);
                    }
                  }}
                >
                  Send again
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {log.data?.deliveries.length === 0 && <p>Nothing delivered yet.</p>}
    </section>
  );
}
