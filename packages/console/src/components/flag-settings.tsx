import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from '../api.ts';
import type { EnvironmentPageProps } from '../app.tsx';
import type { ConsoleFlag, Flag } from '../records.ts';
import { ErrorMessage, ActionForm } from './common.tsx';
import { metadataBody, tagsText, withChange, type MetadataDraft } from './draft-updates.ts';

/** The API client the flag page's parts are given. */
export type FlagApi = EnvironmentPageProps['workspace']['api'];

interface HashingConfig {
  parameter_key: string;
  parameter_type: string;
  order: number;
}

/** The flag's default hash input in this environment: which context values a split hashes. */
export function Hashing({ path, flag, api, onSaved }: { path: string; flag: Flag; api: FlagApi; onSaved: (flag: Flag) => void }) {
  const [text, setText] = useState(() => flag.hashing.map((h) => `${h.parameter_type}.${h.parameter_key}`).join(', '));
  useEffect(() => setText(flag.hashing.map((h) => `${h.parameter_type}.${h.parameter_key}`).join(', ')), [flag.version]);
  return (
    <>
      <h2>Hashing</h2>
      <p class="muted">Splits hash the context key unless you name values here, as context_type.attribute (e.g. "user.key, device.id"). A rule's own setting wins.</p>
      <ActionForm
        label="Hashing"
        class="inline"
        onSubmit={async () => {
          const configs: HashingConfig[] = text
            .split(',')
            .map((part) => part.trim())
            .filter((part) => part !== '')
            .map((part, order) => {
              const dot = part.indexOf('.');
              if (dot <= 0 || dot === part.length - 1) throw new Error(`"${part}" is not context_type.attribute.`);
              return { parameter_type: part.slice(0, dot), parameter_key: part.slice(dot + 1), order };
            });
          const answer = await api.put<{ flag: Flag }>(`${path}/hashing`, { configs, version: flag.version });
          onSaved(answer.flag);
        }}
      >
        <label>
          Hash input
          <input value={text} onInput={(e) => setText((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit">Save hashing</button>
      </ActionForm>
    </>
  );
}

/** Said when a save lost an optimistic-locking race (409 ABORTED): the edits stay on screen until Reload. */
export function ConflictMessage({ onReload }: { onReload: () => void }) {
  return (
    <div class="error" role="alert">
      <p>This flag was changed by someone else since you opened it. Your edits are still here; reload to see their change, then make yours again.</p>
      <button type="button" onClick={onReload}>
        Reload the flag
      </button>
    </div>
  );
}

/** A failed save's message: a version conflict offers the reload, anything else is shown as it is. */
export function SaveProblem({ error, onReload }: { error: unknown; onReload: () => void }) {
  return error instanceof ApiError && error.isConflict ? <ConflictMessage onReload={onReload} /> : <ErrorMessage error={error} />;
}

/**
 * Whether client keys (browsers and apps) may evaluate the flag: `client_visible`, shared by every
 * environment of the project (docs/client-side.md "What a client sees"). Saved at once with the
 * version the page shows, through the same `PUT /{flag_id}` as the description.
 */
export function ClientVisibility({ path, flag, api, onSaved, onReload }: { path: string; flag: ConsoleFlag; api: FlagApi; onSaved: (flag: Flag) => void; onReload: () => void }) {
  const [pending, setPending] = useState<boolean | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [done, setDone] = useState('');
  const visible = flag.client_visible === true;
  const shown = pending ?? visible;
  return (
    <>
      <h2>Client apps</h2>
      <label class="switch">
        <input
          type="checkbox"
          role="switch"
          checked={shown}
          aria-busy={pending !== undefined}
          onChange={async () => {
            if (pending !== undefined) return;
            const target = !visible;
            setPending(target);
            setError(undefined);
            setDone('');
            try {
              const updated = await api.put<ConsoleFlag>(path, { flag: { client_visible: target }, version: flag.version });
              setDone(target ? 'Visible to client keys.' : 'Hidden from client keys.');
              onSaved(updated);
            } catch (caught) {
              setError(caught);
            } finally {
              setPending(undefined);
            }
          }}
        />
        <span>Visible to client keys</span>
        <span role="status">{done}</span>
      </label>
      <p class="muted">
        {shown
          ? 'Web pages and apps holding a client key of this project may evaluate this flag (its value, variant and reason only; never its rules). This holds in every environment of the project.'
          : 'Hidden: for a client key this flag does not exist, in every environment of the project. Server keys are not affected.'}
      </p>
      <SaveProblem
        error={error}
        onReload={() => {
          setError(undefined);
          onReload();
        }}
      />
    </>
  );
}

/**
 * The flag's tags, lifetime, maintainer and bucket_by: project-level, shared by every environment
 * (docs/contract.md "Flag metadata"), saved together through `PUT /{flag_id}` with the version
 * the page shows. A change of bucket_by says what it does to running splits.
 */
export function FlagMetadata({ path, flag, api, onSaved, onReload }: { path: string; flag: Flag; api: FlagApi; onSaved: (flag: Flag) => void; onReload: () => void }) {
  const [draft, setDraft] = useState<MetadataDraft | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState('');
  const stored: MetadataDraft = {
    tags: tagsText(flag.tags),
    lifetime: flag.lifetime ?? 'permanent',
    maintainer: flag.maintainer ?? '',
    bucketBy: flag.bucket_by ?? 'environment',
  };
  const shown = draft ?? stored;
  const edit = (change: Partial<MetadataDraft>) => {
    setDraft((current) => withChange<MetadataDraft>(change)(current ?? stored));
    setDone('');
  };
  const hasSplit = flag.rules.some((rule) => rule.allocation !== undefined);
  return (
    <>
      <h2>Tags and ownership</h2>
      <form
        aria-label="Tags and ownership"
        onSubmit={async (event) => {
          event.preventDefault();
          setBusy(true);
          setError(undefined);
          setDone('');
          try {
            const updated = await api.put<Flag>(path, { flag: metadataBody(shown), version: flag.version });
            setDraft(undefined);
            setDone('Tags and ownership saved.');
            onSaved(updated);
          } catch (caught) {
            setError(caught);
          } finally {
            setBusy(false);
          }
        }}
      >
        <fieldset disabled={busy}>
          <label>
            Tags
            <input class="wide" value={shown.tags} placeholder="checkout, team:payments" onInput={(e) => edit({ tags: (e.target as HTMLInputElement).value })} />
          </label>
          <p class="muted">Separated by commas or spaces; letters, digits and . _ : / - (at most 50, each up to 64 characters).</p>
          <label>
            Lifetime
            <select value={shown.lifetime} onChange={(e) => edit({ lifetime: (e.target as HTMLSelectElement).value as MetadataDraft['lifetime'] })}>
              <option value="permanent">permanent (stays in the code)</option>
              <option value="temporary">temporary (to be removed once rolled out)</option>
            </select>
          </label>
          <label>
            Maintainer
            <input value={shown.maintainer} maxLength={200} placeholder="an email or a team" onInput={(e) => edit({ maintainer: (e.target as HTMLInputElement).value })} />
          </label>
          <label>
            Bucket users by
            <select value={shown.bucketBy} onChange={(e) => edit({ bucketBy: (e.target as HTMLSelectElement).value as MetadataDraft['bucketBy'] })}>
              <option value="environment">environment (each environment picks its own users)</option>
              <option value="project">project (the same users in every environment)</option>
            </select>
          </label>
          {shown.bucketBy !== stored.bucketBy ? (
            <p class="warning-inline" role="note">
              Changing this reshuffles the users of every percentage rollout of this flag, in every environment{hasSplit ? ' (this one has a rollout)' : ''}: users may get another variant than before.
            </p>
          ) : (
            <p class="muted">These are the flag's in every environment of the project.</p>
          )}
          <div class="row">
            <button type="submit" disabled={draft === undefined}>
              Save tags and ownership
            </button>
            {draft !== undefined && (
              <button type="button" onClick={() => setDraft(undefined)}>
                Discard tag changes
              </button>
            )}
          </div>
        </fieldset>
      </form>
      <SaveProblem
        error={error}
        onReload={() => {
          setError(undefined);
          setDraft(undefined);
          onReload();
        }}
      />
      <p role="status">{done}</p>
    </>
  );
}

interface SettingsDraft {
  description: string;
  offVariant: string;
}

/**
 * The flag's description (shared by every environment of the project), the variant it serves
 * when off in this environment, and archiving. Saved with the version the page shows, so a
 * change made meanwhile is a conflict, not overwritten.
 */
export function Settings({
  path,
  flag,
  api,
  onSaved,
  onReload,
  environmentName,
}: {
  path: string;
  flag: Flag;
  api: FlagApi;
  onSaved: (flag: Flag) => void;
  onReload: () => void;
  environmentName: string;
}) {
  const [draft, setDraft] = useState<SettingsDraft | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState('');
  const shown: SettingsDraft = draft ?? { description: flag.description ?? '', offVariant: flag.off_variant_key ?? '' };
  const edit = (change: Partial<SettingsDraft>) => {
    setDraft({ ...shown, ...change });
    setDone('');
  };
  const run = async (work: () => Promise<Flag>, message: string) => {
    setBusy(true);
    setError(undefined);
    setDone('');
    try {
      const updated = await work();
      setDone(message);
      onSaved(updated);
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <h2>Settings</h2>
      <form
        aria-label="Flag settings"
        onSubmit={(event) => {
          event.preventDefault();
          void run(async () => {
            const updated = await api.put<Flag>(path, { flag: { description: shown.description, off_variant_key: shown.offVariant === '' ? null : shown.offVariant }, version: flag.version });
            setDraft(undefined);
            return updated;
          }, 'Settings saved.');
        }}
      >
        <fieldset disabled={busy}>
          <label>
            Description
            <textarea class="wide" rows={2} maxLength={2000} value={shown.description} onInput={(e) => edit({ description: (e.target as HTMLTextAreaElement).value })} />
          </label>
          <p class="muted">The description is the flag's in every environment of the project.</p>
          <label>
            Served when off in {environmentName}
            <select value={shown.offVariant} onChange={(e) => edit({ offVariant: (e.target as HTMLSelectElement).value })}>
              <option value="">nothing (the SDK's default value)</option>
              {flag.variants.map((v) => (
                <option value={v.key}>{v.key}</option>
              ))}
            </select>
          </label>
          <div class="row">
            <button type="submit" disabled={draft === undefined}>
              Save settings
            </button>
            {draft !== undefined && (
              <button type="button" onClick={() => setDraft(undefined)}>
                Discard setting changes
              </button>
            )}
          </div>
        </fieldset>
      </form>
      <p class="muted">
        {flag.archived
          ? 'This flag is archived: it is no longer evaluated, and new experiments cannot use it. Unarchive it to serve it again.'
          : 'An archived flag is no longer evaluated, in any environment of the project; its variants, rules and history are kept, and it can be unarchived.'}
      </p>
      <div class="row">
        <button
          type="button"
          disabled={busy}
          onClick={() =>
            void run(
              () => api.post<Flag>(`${path}/${flag.archived ? 'unarchive' : 'archive'}?version=${flag.version}`),
              flag.archived ? 'Flag unarchived.' : 'Flag archived.',
            )
          }
        >
          {flag.archived ? 'Unarchive the flag' : 'Archive the flag'}
        </button>
      </div>
      <SaveProblem
        error={error}
        onReload={() => {
          setError(undefined);
          setDraft(undefined);
          onReload();
        }}
      />
      <p role="status">{done}</p>
    </>
  );
}

/** Deleting the flag, after a confirmation naming what goes; then back to the flags list. */
export function DeleteFlag({ path, flag, api, onDeleted }: { path: string; flag: Flag; api: FlagApi; onDeleted: () => void }) {
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const confirmButton = useRef<HTMLButtonElement>(null);
  // The confirmation takes the focus, so a keyboard user lands on it.
  useEffect(() => {
    if (confirming) confirmButton.current?.focus();
  }, [confirming]);
  return (
    <>
      <h2>Delete</h2>
      {!confirming && (
        <button type="button" class="danger" onClick={() => setConfirming(true)}>
          Delete the flag {flag.key}
        </button>
      )}
      {confirming && (
        <div class="confirm" role="alertdialog" aria-labelledby="delete-flag-title">
          <p id="delete-flag-title">
            Delete <code>{flag.key}</code>? Its definition and its settings in every environment of the project are removed. This cannot be undone.
          </p>
          <button
            type="button"
            class="danger"
            disabled={busy}
            ref={confirmButton}
            onClick={async () => {
              setBusy(true);
              setError(undefined);
              try {
                await api.delete(`${path}?version=${flag.version}`);
                onDeleted();
              } catch (caught) {
                setError(caught);
              } finally {
                setBusy(false);
              }
            }}
          >
            Yes, delete {flag.key}
          </button>{' '}
          <button
            type="button"
            onClick={() => {
              setConfirming(false);
              setError(undefined);
            }}
          >
            Keep it
          </button>
          <ErrorMessage error={error} />
        </div>
      )}
    </>
  );
}
