import { useState } from 'preact/hooks';
import { apiPath } from '../api.ts';
import type { EnvironmentPageProps } from '../app.tsx';
import { ErrorMessage } from '../components/common.tsx';

/** An entry of an import's answer (docs/flags-as-code.md "Import"). */
interface ImportEntry {
  kind: string;
  key: string;
  environment?: string;
  before?: Record<string, unknown>;
  after?: Record<string, unknown>;
  error?: string;
  code?: string;
}

interface ImportOutcome {
  dry_run: boolean;
  applied: boolean;
  created: ImportEntry[];
  changed: ImportEntry[];
  deleted: ImportEntry[];
  refused: ImportEntry[];
}

const KIND_WORDS: Record<string, string> = {
  flag: 'flag',
  flag_environment: 'flag configuration',
  segment: 'segment',
  event_definition: 'event definition',
  environment: 'environment',
};

const entryName = (entry: ImportEntry) => `${KIND_WORDS[entry.kind] ?? entry.kind} ${entry.environment === undefined ? '' : `${entry.environment} / `}${entry.key}`;

/**
 * Flags as code for the environment's project (docs/flags-as-code.md): download the project's
 * document, and import one after a preview of exactly what it changes (the import's dry run).
 * YAML documents are the `switchyard` command's; the console reads and writes JSON.
 */
export function FlagsAsCodePage({ workspace, project }: EnvironmentPageProps) {
  const { api } = workspace;
  const environments = workspace.environments.filter((e) => e.project_id === project.project_id);
  const [chosen, setChosen] = useState<string[]>(() => environments.map((e) => e.environment_id));
  const [withVersions, setWithVersions] = useState(false);
  const [exportError, setExportError] = useState<unknown>(undefined);
  const [text, setText] = useState('');
  const [prune, setPrune] = useState(false);
  const [preview, setPreview] = useState<ImportOutcome | undefined>(undefined);
  const [result, setResult] = useState<ImportOutcome | undefined>(undefined);
  const [importError, setImportError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);

  const download = async () => {
    setExportError(undefined);
    try {
      const query = new URLSearchParams({ environment_ids: chosen.join(','), ...(withVersions ? { include_versions: 'true' } : {}) });
      const document = await api.get<unknown>(`${apiPath`/v1/projects/${project.project_id}/export`}?${query}`);
      const link = Object.assign(window.document.createElement('a'), {
        href: URL.createObjectURL(new Blob([`${JSON.stringify(document, null, 2)}\n`], { type: 'application/json' })),
        download: `${project.project_name.replace(/[^A-Za-z0-9._-]+/g, '-')}-flags.json`,
      });
      link.click();
      URL.revokeObjectURL(link.href);
    } catch (error) {
      setExportError(error);
    }
  };

  /** The document in the box, or an error saying why it is not one. */
  const parsed = (): unknown => {
    try {
      return JSON.parse(text);
    } catch (error) {
      throw new Error(`The document is not JSON (${(error as Error).message}). YAML documents are imported with the switchyard command.`);
    }
  };

  const send = async (dryRun: boolean) => {
    setImportError(undefined);
    setBusy(true);
    try {
      const query = new URLSearchParams({ dry_run: String(dryRun), prune: String(prune) });
      const outcome = await api.post<ImportOutcome>(`${apiPath`/v1/projects/${project.project_id}/import`}?${query}`, parsed());
      if (dryRun) {
        setPreview(outcome);
        setResult(undefined);
      } else {
        setResult(outcome);
        setPreview(undefined);
      }
    } catch (error) {
      setImportError(error);
    } finally {
      setBusy(false);
    }
  };

  const changes = preview ? preview.created.length + preview.changed.length + preview.deleted.length : 0;
  return (
    <section>
      <h1>Flags as code</h1>
      <p class="muted">
        The flags of {project.project_name}, with each environment's configuration, segments and event definitions, as one document you can keep in a repository. The{' '}
        <code>npx switchyard</code> command does the same from a terminal or CI, in YAML too.
      </p>

      <h2>Export</h2>
      <fieldset>
        <legend>Environments</legend>
        {environments.map((e) => (
          <label>
            <input
              type="checkbox"
              checked={chosen.includes(e.environment_id)}
              onChange={(event) => {
                const on = (event.target as HTMLInputElement).checked;
                setChosen((previous) => (on ? [...previous, e.environment_id] : previous.filter((id) => id !== e.environment_id)));
              }}
            />
            {e.environment_name}
          </label>
        ))}
      </fieldset>
      <label>
        <input type="checkbox" checked={withVersions} onChange={(event) => setWithVersions((event.target as HTMLInputElement).checked)} />
        Include versions (an import then changes only what nobody changed since)
      </label>
      <p>
        <button type="button" onClick={download} disabled={chosen.length === 0}>
          Download JSON
        </button>
      </p>
      <ErrorMessage error={exportError} />

      <h2>Import</h2>
      <label>
        Document file (JSON)
        <input
          type="file"
          accept="application/json,.json"
          onChange={async (event) => {
            const file = (event.target as HTMLInputElement).files?.[0];
            if (file) {
              setText(await file.text());
              setPreview(undefined);
              setResult(undefined);
            }
          }}
        />
      </label>
      <label>
        Document
        <textarea
          rows={10}
          spellcheck={false}
          value={text}
          onInput={(event) => {
            setText((event.target as HTMLTextAreaElement).value);
            setPreview(undefined);
          }}
        />
      </label>
      <label>
        <input
          type="checkbox"
          checked={prune}
          onChange={(event) => {
            setPrune((event.target as HTMLInputElement).checked);
            setPreview(undefined);
          }}
        />
        Delete flags, segments and event definitions the document leaves out
      </label>
      <p>
        <button type="button" disabled={busy || text.trim() === ''} onClick={() => send(true)}>
          Preview changes
        </button>{' '}
        {preview && preview.refused.length === 0 && changes > 0 && (
          <button type="button" class="primary" disabled={busy} onClick={() => send(false)}>
            {`Apply these ${changes} changes`}
          </button>
        )}
      </p>
      <ErrorMessage error={importError} />
      {preview && <OutcomeList outcome={preview} title="What the import would change (nothing has been written)" />}
      {result && <OutcomeList outcome={result} title="Imported" />}
    </section>
  );
}

function OutcomeList({ outcome, title }: { outcome: ImportOutcome; title: string }) {
  const empty = outcome.created.length + outcome.changed.length + outcome.deleted.length + outcome.refused.length === 0;
  return (
    <div class="import-outcome" role="status">
      <h3>{title}</h3>
      {empty && <p>The document and the project do not differ.</p>}
      {outcome.refused.length > 0 && (
        <>
          <p class="error">{`${outcome.refused.length} change(s) would be refused, so nothing can be imported until the document is fixed:`}</p>
          <ul>
            {outcome.refused.map((entry) => (
              <li>
                <strong>{entryName(entry)}</strong>: {entry.error}
              </li>
            ))}
          </ul>
        </>
      )}
      <ul>
        {outcome.created.map((entry) => (
          <li>{`Create ${entryName(entry)}`}</li>
        ))}
        {outcome.changed.map((entry) => (
          <li>{`Change ${entryName(entry)}: ${Object.keys({ ...entry.before, ...entry.after }).join(', ')}`}</li>
        ))}
        {outcome.deleted.map((entry) => (
          <li>{`Delete ${entryName(entry)}`}</li>
        ))}
      </ul>
    </div>
  );
}
