import { useEffect, useRef, useState } from 'preact/hooks';
import { apiPath } from '../api.ts';
import type { Environment, Flag, Rule } from '../records.ts';
import { ActionForm, ConfirmDialog, ErrorMessage, useLoad } from './common.tsx';
import type { FlagApi } from './flag-settings.tsx';

/** The value typed for a variant, read as the flag's type (JSON for everything but strings). */
function parseVariantValue(valueType: string, text: string): unknown {
  if (valueType === 'string') return text;
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`"${text}" is not a ${valueType === 'json' ? 'JSON value' : valueType}.`);
  }
}

/** Where one environment's flag serves a variant: its rules naming it (variant or rollout bucket) and its off variant. */
function usesIn(flag: Pick<Flag, 'rules' | 'off_variant_key'>, variantKey: string): string[] {
  const uses = flag.rules
    .filter((rule: Rule) => rule.variant_key === variantKey || rule.allocation?.buckets.some((b) => b.variant_key === variantKey))
    .map((rule) => `rule ${rule.id}`);
  if (flag.off_variant_key === variantKey) uses.push('the off variant');
  return uses;
}

/**
 * The Variants tab: each variant's value (changed in place), where it is served in the project's
 * environments, and its removal once nothing serves it (the API refuses otherwise:
 * docs/contract.md "Flags"). A bool flag keeps its two variants: no add or remove.
 */
export function VariantsTab({ path, flag, api, environments, onSaved }: { path: string; flag: Flag; api: FlagApi; environments: Environment[]; onSaved: (flag: Flag) => void }) {
  // Every environment of the project: a variant served in any of them cannot go.
  const states = useLoad(
    () => Promise.all(environments.map(async (e) => ({ environment: e, flag: await api.get<Flag>(apiPath`/v1/environments/${e.environment_id}/flags/${flag.key}`).catch(() => null) }))),
    [flag.key, flag.version, environments.map((e) => e.environment_id).join()],
  );
  const [removing, setRemoving] = useState<string | undefined>(undefined);
  const bool = flag.value_type === 'bool';
  const whereServed = (variantKey: string): string[] | undefined =>
    states.data?.flatMap(({ environment, flag: state }) => {
      const uses = state ? usesIn(state, variantKey) : [];
      return uses.length === 0 ? [] : [`${environment.environment_name}: ${uses.join(', ')}`];
    });
  return (
    <>
      <table class="list">
        <caption class="visually-hidden">Variants of {flag.key}</caption>
        <thead>
          <tr>
            <th scope="col">Key</th>
            <th scope="col">Value</th>
            <th scope="col">Served in</th>
          </tr>
        </thead>
        <tbody>
          {flag.variants.map((v) => {
            const served = whereServed(v.key);
            return (
              <tr>
                <td>{v.key}</td>
                <td>
                  <VariantValue path={path} valueType={flag.value_type} variantKey={v.key} value={v.value} api={api} onSaved={onSaved} />
                </td>
                <td>
                  {served === undefined ? '…' : served.length === 0 ? <span class="muted">nowhere</span> : served.map((line) => <div>{line}</div>)}
                  {!bool && served !== undefined && served.length === 0 && flag.variants.length > 1 && (
                    <div>
                      <button type="button" class="link" onClick={() => setRemoving(v.key)}>
                        Remove variant {v.key}
                      </button>
                    </div>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      <ErrorMessage error={states.error} />
      {removing !== undefined && (
        <ConfirmDialog
          key={removing}
          titleId="remove-variant-title"
          question={
            <>
              Remove the variant <code>{removing}</code> from {flag.key}? No rule and no off variant serves it in any environment of the project; an SDK that asks for it by key gets its default.
            </>
          }
          confirmLabel={`Yes, remove ${removing}`}
          onConfirm={async () => {
            const updated = await api.put<Flag>(path, { flag: { variants: flag.variants.filter((v) => v.key !== removing) }, version: flag.version });
            setRemoving(undefined);
            onSaved(updated);
          }}
          onCancel={() => setRemoving(undefined)}
        />
      )}
      {bool ? (
        <p class="muted">A bool flag has its two variants, true and false: none is added or removed.</p>
      ) : (
        <>
          <p class="muted">A variant that a rule or the off variant serves, in any environment of the project, cannot be removed: change those first.</p>
          <AddVariant path={path} valueType={flag.value_type} api={api} onAdded={onSaved} />
        </>
      )}
    </>
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
  api: FlagApi;
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

function AddVariant({ path, valueType, api, onAdded }: { path: string; valueType: string; api: FlagApi; onAdded: (flag: Flag) => void }) {
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

