import { useEffect, useRef, useState } from 'preact/hooks';
import { apiPath, ApiError } from '../api.ts';
import type { EnvironmentPageProps } from '../app.tsx';
import { ActionForm, ErrorMessage, Loading, useLoad } from '../components/common.tsx';
import { HistoryList } from '../components/history-list.tsx';
import { RuleEditor, totalPercent } from '../components/rule-editor.tsx';
import type { AuditEntry, ConsoleFlag, Flag, Rule } from '../records.ts';
import { hrefOf, navigate } from '../router.ts';

interface HashingConfig {
  parameter_key: string;
  parameter_type: string;
  order: number;
}

/** The value typed for a variant, read as the flag's type (JSON for everything but strings). */
function parseVariantValue(valueType: string, text: string): unknown {
  if (valueType === 'string') return text;
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`"${text}" is not a ${valueType === 'json' ? 'JSON value' : valueType}.`);
  }
}

export function FlagPage({ workspace, environment, flagKey }: EnvironmentPageProps & { flagKey: string }) {
  const { api } = workspace;
  const path = apiPath`/v1/environments/${environment.environment_id}/flags/${flagKey}`;
  const flag = useLoad(() => api.get<Flag>(path), [path]);
  const history = useLoad(() => api.get<{ entries: AuditEntry[] }>(`${path}/history?limit=50`), [path, flag.data?.version]);
  const [draft, setDraft] = useState<Rule[] | undefined>(undefined);
  const [saveError, setSaveError] = useState<unknown>(undefined);
  const [saved, setSaved] = useState('');
  const [switching, setSwitching] = useState<boolean | undefined>(undefined);
  const [switched, setSwitched] = useState('');
  useEffect(() => setDraft(undefined), [path]);
  useEffect(() => setSwitching(undefined), [flag.data?.version, flag.data?.enabled]);

  if (flag.error && !flag.data) return <ErrorMessage error={flag.error} />;
  if (!flag.data) return <Loading what="the flag" />;
  const current = flag.data;
  const rules = draft ?? current.rules;
  const dirty = draft !== undefined;
  const conflict = saveError instanceof ApiError && saveError.isConflict;
  const invalidSplit = rules.some((r) => r.allocation && totalPercent(r) !== 100);

  const setRules = (next: Rule[]) => {
    setDraft(next);
    setSaved('');
  };
  const saveRules = async () => {
    setSaveError(undefined);
    try {
      const updated = await api.put<Flag>(`${path}/rules`, { rules: rules.map((r, i) => ({ ...r, id: r.id || `rule-${i + 1}` })), version: current.version });
      // The saved flag, with its new version, at once: the next save (the switch pressed right
      // after, say) must not be sent with the version from before this one, which the API
      // refuses as "changed by someone else".
      setDraft(undefined);
      setSaved('Rules saved.');
      flag.set(updated);
    } catch (error) {
      setSaveError(error);
    }
  };

  return (
    <section>
      <p>
        <a href={hrefOf({ envId: environment.environment_id, page: 'flags' })}>← All flags</a>
      </p>
      <h1>{current.key}</h1>
      <p class="muted">
        {current.value_type} flag{current.description ? ` — ${current.description}` : ''} · version {current.version} in {environment.environment_name}
        {current.archived ? ' · archived' : ''}
      </p>
      <label class="switch">
        <input
          type="checkbox"
          role="switch"
          checked={switching ?? current.enabled}
          aria-busy={switching !== undefined}
          onChange={async () => {
            // Shown at once and held until the saved flag is back, so the switch never flickers;
            // a second press meanwhile is ignored (the control stays focusable for keyboards).
            // The flag the API answers with replaces the page's copy in the same render that
            // says "Turned on.", so what is on screen always carries the flag's current version.
            if (switching !== undefined) return;
            const target = !current.enabled;
            setSwitching(target);
            setSaveError(undefined);
            setSwitched('');
            try {
              const updated = await api.put<Flag>(path, { enabled: target, version: current.version });
              setSwitched(target ? 'Turned on.' : 'Turned off.');
              setSwitching(undefined);
              flag.set(updated);
            } catch (error) {
              setSaveError(error);
              setSwitching(undefined);
              flag.reload();
            }
          }}
        />
        <span>{(switching ?? current.enabled) ? `On in ${environment.environment_name}` : `Off in ${environment.environment_name} (serves ${current.off_variant_key ?? 'nothing'})`}</span>
        <span role="status">{switched}</span>
      </label>

      <h2>Variants</h2>
      <table class="list">
        <thead>
          <tr>
            <th scope="col">Key</th>
            <th scope="col">Value</th>
          </tr>
        </thead>
        <tbody>
          {current.variants.map((v) => (
            <tr>
              <td>
                {v.key}
                {v.key === current.off_variant_key ? ' (served when off)' : ''}
              </td>
              <td>
                <VariantValue path={path} valueType={current.value_type} variantKey={v.key} value={v.value} api={api} onSaved={flag.set} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <AddVariant path={path} valueType={current.value_type} api={api} onAdded={flag.set} />

      <h2>Rules</h2>
      <p class="muted">Rules are tried in order; the first that matches decides. When none matches, the flag serves {current.off_variant_key ?? 'its off variant'}.</p>
      <form
        aria-label="Rules"
        onSubmit={(event) => {
          event.preventDefault();
          void saveRules();
        }}
      >
        {rules.map((rule, i) => (
          <RuleEditor
            flag={current}
            rule={rule}
            index={i}
            count={rules.length}
            onChange={(next) => setRules(rules.map((r, j) => (j === i ? next : r)))}
            onRemove={() => setRules(rules.filter((_, j) => j !== i))}
            onMove={(delta) => {
              const next = [...rules];
              const [moved] = next.splice(i, 1);
              next.splice(i + delta, 0, moved!);
              setRules(next);
            }}
          />
        ))}
        <div class="row">
          <button type="button" onClick={() => setRules([...rules, { id: `rule-${Date.now().toString(36)}`, conditions: [], variant_key: current.variants[0]?.key ?? '' }])}>
            Add rule
          </button>
          <button type="submit" disabled={!dirty || invalidSplit}>
            Save rules
          </button>
          {dirty && (
            <button type="button" onClick={() => setDraft(undefined)}>
              Discard changes
            </button>
          )}
        </div>
        {conflict ? (
          <ConflictMessage
            onReload={() => {
              setSaveError(undefined);
              setDraft(undefined);
              flag.reload();
            }}
          />
        ) : (
          <ErrorMessage error={saveError} />
        )}
        <p role="status">{saved}</p>
      </form>

      <Hashing path={path} flag={current} api={api} onSaved={flag.set} />

      <ClientVisibility path={path} flag={current} api={api} onSaved={flag.set} onReload={flag.reload} />

      <Settings path={path} flag={current} api={api} onSaved={flag.set} onReload={flag.reload} environmentName={environment.environment_name} />

      <DeleteFlag path={path} flag={current} api={api} onDeleted={() => navigate({ envId: environment.environment_id, page: 'flags' })} />

      <h2>History</h2>
      <ErrorMessage error={history.error} />
      {history.data && <HistoryList entries={history.data.entries} />}
    </section>
  );
}

/** How a value is typed in a variant's field: text for a string flag, JSON otherwise. */
const valueText = (valueType: string, value: unknown): string => (valueType === 'string' && typeof value === 'string' ? value : JSON.stringify(value));

/**
 * A variant's value, and a form to change it in place (the variants route sets the value of an
 * existing key). Every environment of the project serves the new value.
 */
function VariantValue({
  path,
  valueType,
  variantKey,
  value,
  api,
  onSaved,
}: {
  path: string;
  valueType: string;
  variantKey: string;
  value: unknown;
  api: EnvironmentPageProps['workspace']['api'];
  onSaved: (flag: Flag) => void;
}) {
  const [text, setText] = useState<string | undefined>(undefined);
  const field = useRef<HTMLInputElement>(null);
  useEffect(() => {
    if (text !== undefined) field.current?.focus();
  }, [text !== undefined]);
  if (text === undefined) {
    return (
      <>
        <code>{JSON.stringify(value)}</code>{' '}
        <button type="button" class="link" aria-label={`Change the value of ${variantKey}`} onClick={() => setText(valueText(valueType, value))}>
          Change
        </button>
      </>
    );
  }
  return (
    <ActionForm
      label={`Value of ${variantKey}`}
      class="inline"
      onSubmit={async () => {
        const updated = await api.post<Flag>(`${path}/variants`, { variants: [{ key: variantKey, value: parseVariantValue(valueType, text) }] });
        setText(undefined);
        onSaved(updated);
      }}
    >
      <label>
        New value ({valueType === 'string' ? 'text' : `${valueType}, as JSON`})
        <input ref={field} required={valueType !== 'string'} value={text} onInput={(e) => setText((e.target as HTMLInputElement).value)} />
      </label>
      <button type="submit">Save value</button>
      <button type="button" onClick={() => setText(undefined)}>
        Cancel
      </button>
    </ActionForm>
  );
}

function AddVariant({ path, valueType, api, onAdded }: { path: string; valueType: string; api: EnvironmentPageProps['workspace']['api']; onAdded: (flag: Flag) => void }) {
  const [key, setKey] = useState('');
  const [value, setValue] = useState('');
  return (
    <ActionForm
      label="Add a variant"
      class="inline"
      onSubmit={async () => {
        const updated = await api.post<Flag>(`${path}/variants`, { variants: [{ key, value: parseVariantValue(valueType, value) }] });
        setKey('');
        setValue('');
        onAdded(updated);
      }}
    >
      <label>
        Variant key
        <input required value={key} onInput={(e) => setKey((e.target as HTMLInputElement).value)} />
      </label>
      <label>
        Value ({valueType === 'string' ? 'text' : `${valueType}, as JSON`})
        <input required={valueType !== 'string'} value={value} onInput={(e) => setValue((e.target as HTMLInputElement).value)} />
      </label>
      <button type="submit">Add variant</button>
    </ActionForm>
  );
}

/** The flag's default hash input in this environment: which context values a split hashes. */
function Hashing({ path, flag, api, onSaved }: { path: string; flag: Flag; api: EnvironmentPageProps['workspace']['api']; onSaved: (flag: Flag) => void }) {
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
function ConflictMessage({ onReload }: { onReload: () => void }) {
  return (
    <div class="error" role="alert">
      <p>This flag was changed by someone else since you opened it. Your edits are still here; reload to see their change, then make yours again.</p>
      <button type="button" onClick={onReload}>
        Reload the flag
      </button>
    </div>
  );
}

/**
 * Whether client keys (browsers and apps) may evaluate the flag: `client_visible`, shared by every
 * environment of the project (docs/client-side.md "What a client sees"). Saved at once with the
 * version the page shows, through the same `PUT /{flag_id}` as the description.
 */
function ClientVisibility({ path, flag, api, onSaved, onReload }: { path: string; flag: ConsoleFlag; api: EnvironmentPageProps['workspace']['api']; onSaved: (flag: Flag) => void; onReload: () => void }) {
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
      {error instanceof ApiError && error.isConflict ? (
        <ConflictMessage
          onReload={() => {
            setError(undefined);
            onReload();
          }}
        />
      ) : (
        <ErrorMessage error={error} />
      )}
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
function Settings({
  path,
  flag,
  api,
  onSaved,
  onReload,
  environmentName,
}: {
  path: string;
  flag: Flag;
  api: EnvironmentPageProps['workspace']['api'];
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
  const conflict = error instanceof ApiError && error.isConflict;
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
      {conflict ? (
        <ConflictMessage
          onReload={() => {
            setError(undefined);
            setDraft(undefined);
            onReload();
          }}
        />
      ) : (
        <ErrorMessage error={error} />
      )}
      <p role="status">{done}</p>
    </>
  );
}

/** Deleting the flag, after a confirmation naming what goes; then back to the flags list. */
function DeleteFlag({ path, flag, api, onDeleted }: { path: string; flag: Flag; api: EnvironmentPageProps['workspace']['api']; onDeleted: () => void }) {
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
