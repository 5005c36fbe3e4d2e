import { environmentIdOfPath } from '../protected-writes.ts';
import { apiPath } from '../api.ts';
import { useEffect, useState } from 'preact/hooks';
import type { EnvironmentPageProps } from '../app.tsx';
import { ActionForm, ErrorMessage, Loading, useLoad } from '../components/common.tsx';
import { ConditionsEditor } from '../components/rule-editor.tsx';
import type { Condition, Segment } from '../records.ts';

/** Keys shown per page of a list segment's keys. */
const KEYS_PAGE = 50;

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
  const base = apiPath`/v1/environments/${environment.environment_id}/segments`;
  const segments = useLoad(() => api.get<Segment[]>(base), [base]);
  const [key, setKey] = useState('');
  const [kind, setKind] = useState<'list' | 'rule'>('list');
  const [contextType, setContextType] = useState('user');
  return (
    <section>
      <h1>Segments</h1>
      <p class="muted">A rule segment matches contexts by conditions; a list segment by key (upload a CSV of keys, or add them by hand; show the keys to page through them and remove one). Flag rules name segments by key.</p>
      <ErrorMessage error={segments.error} />
      {segments.loading && !segments.data && <Loading what="segments" />}
      {(segments.data ?? []).map((segment) => (
        <SegmentCard
          base={base}
          segment={segment}
          api={api}
          onChanged={segments.reload}
          onSaved={(saved) => segments.set((list) => (list ?? []).map((s) => (s.key === saved.key ? saved : s)))}
        />
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

function SegmentCard({
  base,
  segment,
  api,
  onChanged,
  onSaved,
}: {
  base: string;
  segment: Segment;
  api: EnvironmentPageProps['workspace']['api'];
  onChanged: () => void;
  onSaved: (segment: Segment) => void;
}) {
  const [progress, setProgress] = useState<{ done: number; total: number } | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [list, setList] = useState<'included' | 'excluded'>('included');
  const upload = async (file: File) => {
    setError(undefined);
    const keys = keysOfCsv(await file.text());
    setProgress({ done: 0, total: keys.length });
    try {
      // One upload is one change: a protected environment asks once for all its chunks.
      const writes = await api.confirmedWrites(environmentIdOfPath(base)!);
      for (let at = 0; at < keys.length; at += UPLOAD_CHUNK) {
        const chunk = keys.slice(at, at + UPLOAD_CHUNK);
        await writes.patch(`${base}/${encodeURIComponent(segment.key)}/members`, list === 'included' ? { add_included: chunk } : { add_excluded: chunk });
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
      {segment.kind === 'list' && <SegmentKeys base={base} segment={segment} api={api} onChanged={onChanged} />}
      {segment.kind === 'rule' && <RuleSegmentConditions base={base} segment={segment} api={api} onSaved={onSaved} />}
      <ErrorMessage error={error} />
    </article>
  );
}

/** A rule segment's conditions, edited like a flag rule's and saved with the segment's version (409 if it changed meanwhile). */
function RuleSegmentConditions({ base, segment, api, onSaved }: { base: string; segment: Segment; api: EnvironmentPageProps['workspace']['api']; onSaved: (segment: Segment) => void }) {
  const [draft, setDraft] = useState<Condition[] | undefined>(undefined);
  const conditions = draft ?? segment.conditions;
  return (
    <ActionForm
      label={`Conditions of ${segment.key}`}
      onSubmit={async () => {
        // The saved segment, with its new version, replaces the shown one at once: no flash of the
        // old conditions, and a second save right after is sent with the new version.
        const saved = await api.put<Segment>(`${base}/${encodeURIComponent(segment.key)}`, { conditions, version: segment.version });
        setDraft(undefined);
        onSaved(saved);
      }}
    >
      <p class="muted">A {segment.context_type} context is in {segment.key} when every condition holds.</p>
      <ConditionsEditor label={segment.key} conditions={conditions} onChange={(update) => setDraft((current) => update(current ?? segment.conditions))} />
      <button type="submit" disabled={draft === undefined}>
        Save conditions of {segment.key}
      </button>
    </ActionForm>
  );
}

/**
 * A list segment's keys, a page at a time in key order (GET .../members), with a remove button
 * per key (PATCH .../members), and a field adding a few keys by hand. Hidden until asked for, so
 * a page of many segments loads no keys.
 */
function SegmentKeys({ base, segment, api, onChanged }: { base: string; segment: Segment; api: EnvironmentPageProps['workspace']['api']; onChanged: () => void }) {
  const members = `${base}/${encodeURIComponent(segment.key)}/members`;
  const [open, setOpen] = useState(false);
  const [list, setList] = useState<'included' | 'excluded'>('included');
  /** The cursors of the pages before the one shown (for "Previous"), and the one shown. */
  const [cursors, setCursors] = useState<Array<string | null>>([null]);
  const [round, setRound] = useState(0);
  const [page, setPage] = useState<{ keys: string[]; next_cursor: string | null } | undefined>(undefined);
  const [loadError, setLoadError] = useState<unknown>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [done, setDone] = useState('');
  const [adding, setAdding] = useState('');
  const cursor = cursors[cursors.length - 1] ?? null;
  useEffect(() => {
    if (!open) return;
    let current = true;
    setLoadError(undefined);
    const query = new URLSearchParams({ list, limit: String(KEYS_PAGE), ...(cursor === null ? {} : { cursor }) });
    api.get<{ keys: string[]; next_cursor: string | null }>(`${members}?${query}`).then(
      (answer) => current && setPage(answer),
      (caught: unknown) => current && setLoadError(caught),
    );
    return () => {
      current = false;
    };
  }, [open, members, list, cursor, round]);
  const listName = list === 'included' ? 'included keys' : 'excluded keys';
  /** Applies a change of the keys; true when the API took it. */
  const change = async (body: Record<string, string[]>, message: string): Promise<boolean> => {
    setError(undefined);
    setDone('');
    try {
      await api.patch(members, body);
      setDone(message);
      setRound((n) => n + 1);
      onChanged();
      return true;
    } catch (caught) {
      setError(caught);
      return false;
    }
  };
  return (
    <div>
      <button
        type="button"
        aria-expanded={open}
        onClick={() => {
          setOpen(!open);
          setDone('');
        }}
      >
        {open ? `Hide the keys of ${segment.key}` : `Show the keys of ${segment.key}`}
      </button>
      {open && (
        <div class="keys">
          <div class="inline">
            <label>
              Show
              <select
                value={list}
                onChange={(e) => {
                  setList((e.target as HTMLSelectElement).value as 'included' | 'excluded');
                  setCursors([null]);
                  setPage(undefined);
                }}
              >
                <option value="included">included keys</option>
                <option value="excluded">excluded keys</option>
              </select>
            </label>
          </div>
          <form
            class="inline"
            aria-label={`Add keys to ${segment.key}`}
            onSubmit={(event) => {
              event.preventDefault();
              const keys = adding.split(',').map((key) => key.trim()).filter((key) => key !== '');
              if (keys.length === 0) return;
              void change(list === 'included' ? { add_included: keys } : { add_excluded: keys }, `Added ${keys.length} ${keys.length === 1 ? 'key' : 'keys'} to the ${listName}.`).then((ok) => ok && setAdding(''));
            }}
          >
            <label>
              New {listName} (comma-separated)
              <input value={adding} onInput={(e) => setAdding((e.target as HTMLInputElement).value)} />
            </label>
            <button type="submit">Add keys</button>
          </form>
          <ErrorMessage error={loadError} />
          {!page && !loadError && <Loading what="keys" />}
          {page && page.keys.length === 0 && <p>{cursors.length === 1 ? `No ${listName}.` : 'No more keys.'}</p>}
          {page && page.keys.length > 0 && (
            <table class="list compact" aria-label={`${listName} of ${segment.key}`}>
              <thead>
                <tr>
                  <th scope="col">Key</th>
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {page.keys.map((key) => (
                  <tr>
                    <td>
                      <code>{key}</code>
                    </td>
                    <td>
                      <button
                        type="button"
                        class="danger"
                        onClick={() => change(list === 'included' ? { remove_included: [key] } : { remove_excluded: [key] }, `Removed ${key} from the ${listName}.`)}
                      >
                        Remove {key}
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <div class="row">
            {cursors.length > 1 && (
              <button type="button" onClick={() => setCursors(cursors.slice(0, -1))}>
                Previous keys
              </button>
            )}
            {page?.next_cursor && (
              <button type="button" onClick={() => setCursors([...cursors, page.next_cursor])}>
                Next {KEYS_PAGE} keys
              </button>
            )}
          </div>
          <ErrorMessage error={error} />
          <p role="status">{done}</p>
        </div>
      )}
    </div>
  );
}
