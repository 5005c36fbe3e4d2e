import { useState } from 'preact/hooks';
import type { EnvironmentPageProps } from '../app.tsx';
import { ActionForm, ErrorMessage, Loading, useLoad } from '../components/common.tsx';
import { ConditionsEditor } from '../components/rule-editor.tsx';
import type { Condition, Segment } from '../records.ts';

/** Keys per request: the members route takes at most 10,000 keys per list (docs/contract.md "Segments"). */
const UPLOAD_CHUNK = 10_000;

/** The keys of a CSV file: the first column of each line, without quotes, blanks or a "key" header. */
export function keysOfCsv(text: string): string[] {
  const keys: string[] = [];
  for (const line of text.split(/\r?\n/)) {
    const first = line.split(',')[0]!.trim().replace(/^"(.*)"$/, '$1');
    if (first !== '') keys.push(first);
  }
  if (keys[0]?.toLowerCase() === 'key') keys.shift();
  return keys;
}

export function SegmentsPage({ workspace, environment }: EnvironmentPageProps) {
  const { api } = workspace;
  const base = `/v1/environments/${environment.environment_id}/segments`;
  const segments = useLoad(() => api.get<Segment[]>(base), [base]);
  const [key, setKey] = useState('');
  const [kind, setKind] = useState<'list' | 'rule'>('list');
  const [contextType, setContextType] = useState('user');
  return (
    <section>
      <h1>Segments</h1>
      <p class="muted">A rule segment matches contexts by conditions; a list segment by key (upload a CSV of keys). Flag rules name segments by key.</p>
      <ErrorMessage error={segments.error} />
      {segments.loading && !segments.data && <Loading what="segments" />}
      {(segments.data ?? []).map((segment) => (
        <SegmentCard base={base} segment={segment} api={api} onChanged={segments.reload} />
      ))}
      <h2>New segment</h2>
      <ActionForm
        label="New segment"
        class="inline"
        onSubmit={async () => {
          await api.post(base, { key, kind, context_type: contextType, conditions: [] });
          setKey('');
          segments.reload();
        }}
      >
        <label>
          Key
          <input required value={key} onInput={(e) => setKey((e.target as HTMLInputElement).value)} />
        </label>
        <label>
          Kind
          <select value={kind} onChange={(e) => setKind((e.target as HTMLSelectElement).value as 'list' | 'rule')}>
            <option value="list">list of keys</option>
            <option value="rule">conditions</option>
          </select>
        </label>
        <label>
          Context type
          <input required value={contextType} onInput={(e) => setContextType((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit">Create segment</button>
      </ActionForm>
    </section>
  );
}

function SegmentCard({ base, segment, api, onChanged }: { base: string; segment: Segment; api: EnvironmentPageProps['workspace']['api']; onChanged: () => void }) {
  const [progress, setProgress] = useState<{ done: number; total: number } | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [list, setList] = useState<'included' | 'excluded'>('included');
  const upload = async (file: File) => {
    setError(undefined);
    const keys = keysOfCsv(await file.text());
    setProgress({ done: 0, total: keys.length });
    try {
      for (let at = 0; at < keys.length; at += UPLOAD_CHUNK) {
        const chunk = keys.slice(at, at + UPLOAD_CHUNK);
        await api.patch(`${base}/${encodeURIComponent(segment.key)}/members`, list === 'included' ? { add_included: chunk } : { add_excluded: chunk });
        setProgress({ done: Math.min(keys.length, at + chunk.length), total: keys.length });
      }
      onChanged();
    } catch (caught) {
      setError(caught);
    }
  };
  return (
    <article class="card">
      <h2>{segment.key}</h2>
      <p class="muted">
        {segment.kind === 'list' ? `List of ${segment.context_type} keys: ${segment.included_count} included, ${segment.excluded_count} excluded` : `Conditions on ${segment.context_type}: ${segment.conditions.length}`}
      </p>
      {segment.kind === 'list' && (
        <div class="inline">
          <label>
            Add to
            <select value={list} onChange={(e) => setList((e.target as HTMLSelectElement).value as 'included' | 'excluded')}>
              <option value="included">included keys</option>
              <option value="excluded">excluded keys</option>
            </select>
          </label>
          <label>
            CSV of keys for {segment.key}
            <input type="file" accept=".csv,text/csv,text/plain" onChange={(e) => {
              const file = (e.target as HTMLInputElement).files?.[0];
              if (file) void upload(file);
            }} />
          </label>
          {progress && (
            <label>
              Upload progress
              <progress max={progress.total} value={progress.done}>
                {progress.done} of {progress.total}
              </progress>
              <span role="status">
                {progress.done} of {progress.total} keys
              </span>
            </label>
          )}
        </div>
      )}
      {segment.kind === 'rule' && <RuleSegmentConditions base={base} segment={segment} api={api} onChanged={onChanged} />}
      <ErrorMessage error={error} />
    </article>
  );
}

/** A rule segment's conditions, edited like a flag rule's and saved with the segment's version (409 if it changed meanwhile). */
function RuleSegmentConditions({ base, segment, api, onChanged }: { base: string; segment: Segment; api: EnvironmentPageProps['workspace']['api']; onChanged: () => void }) {
  const [draft, setDraft] = useState<Condition[] | undefined>(undefined);
  const conditions = draft ?? segment.conditions;
  return (
    <ActionForm
      label={`Conditions of ${segment.key}`}
      onSubmit={async () => {
        await api.put(`${base}/${encodeURIComponent(segment.key)}`, { conditions, version: segment.version });
        setDraft(undefined);
        onChanged();
      }}
    >
      <p class="muted">A {segment.context_type} context is in {segment.key} when every condition holds.</p>
      <ConditionsEditor label={segment.key} conditions={conditions} onChange={setDraft} />
      <button type="submit" disabled={draft === undefined}>
        Save conditions of {segment.key}
      </button>
    </ActionForm>
  );
}
