import { apiPath } from '../api.ts';
import { useState } from 'preact/hooks';
import type { Workspace } from '../app.tsx';
import { ErrorMessage, Loading, useLoad } from '../components/common.tsx';
import { HistoryList, useHistoryNames } from '../components/history-list.tsx';
import type { AuditEntry } from '../records.ts';

const RESOURCE_TYPES = ['', 'flag', 'segment', 'event_definition', 'experiment', 'project', 'environment', 'sdk_key', 'user', 'invitation', 'auth_provider'];

interface Page {
  entries: AuditEntry[];
  next_cursor?: string | null;
}

export function HistoryPage({ workspace }: { workspace: Workspace }) {
  const { api, session, environments } = workspace;
  const [resourceType, setResourceType] = useState('');
  const [resourceId, setResourceId] = useState('');
  const [environmentId, setEnvironmentId] = useState('');
  const [cursor, setCursor] = useState<string | undefined>(undefined);
  const query = new URLSearchParams({ limit: '50' });
  if (resourceType) query.set('resource_type', resourceType);
  if (resourceId.trim()) query.set('resource_id', resourceId.trim());
  if (environmentId) query.set('environment_id', environmentId);
  if (cursor) query.set('cursor', cursor);
  const path = `${apiPath`/v1/management/orgs/${session.org_id}/audit-log`}?${query}`;
  const page = useLoad(() => api.get<Page>(path), [path]);
  const names = useHistoryNames(api, session.org_id, environments);
  const resetTo = (apply: () => void) => {
    apply();
    setCursor(undefined);
  };
  return (
    <section>
      <h1>Change history</h1>
      <form class="inline" aria-label="Filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          Kind
          <select value={resourceType} onChange={(e) => resetTo(() => setResourceType((e.target as HTMLSelectElement).value))}>
            {RESOURCE_TYPES.map((t) => (
              <option value={t}>{t === '' ? 'everything' : t.replace('_', ' ')}</option>
            ))}
          </select>
        </label>
        <label>
          Key or id
          <input value={resourceId} onChange={(e) => resetTo(() => setResourceId((e.target as HTMLInputElement).value))} />
        </label>
        <label>
          Environment
          <select value={environmentId} onChange={(e) => resetTo(() => setEnvironmentId((e.target as HTMLSelectElement).value))}>
            <option value="">all</option>
            {environments.map((e) => (
              <option value={e.environment_id}>{e.environment_name}</option>
            ))}
          </select>
        </label>
      </form>
      <ErrorMessage error={page.error} />
      {page.loading && !page.data && <Loading what="the history" />}
      {page.data && <HistoryList entries={page.data.entries} names={names} />}
      <div class="row">
        {cursor && (
          <button type="button" onClick={() => setCursor(undefined)}>
            Newest
          </button>
        )}
        {page.data?.next_cursor && (
          <button type="button" onClick={() => setCursor(page.data!.next_cursor!)}>
            Older changes
          </button>
        )}
      </div>
    </section>
  );
}
