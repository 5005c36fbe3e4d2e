import { useEffect, useState } from 'preact/hooks';
import { apiPath } from '../api.ts';
import type { Flag, Prerequisite } from '../records.ts';
import { ErrorMessage, useLoad } from './common.tsx';
import { atIndex, withChange, withVariant } from './draft-updates.ts';
import type { DraftUpdate } from './experiment-setup.ts';
import { SaveProblem, type FlagApi } from './flag-settings.tsx';

/** At most this many per flag and environment (docs/contract.md "Prerequisites"). */
const MAX_PREREQUISITES = 50;

/**
 * The flag's prerequisites in this environment (checked before its rules): each names another flag
 * of the project and the variants it must serve. Edited as a draft of the list, changed with
 * updaters of the current draft (DraftUpdate), saved with the flag's version.
 */
export function Prerequisites({
  path,
  flag,
  api,
  environmentId,
  onSaved,
  onReload,
}: {
  path: string;
  flag: Flag;
  api: FlagApi;
  environmentId: string;
  onSaved: (flag: Flag) => void;
  onReload: () => void;
}) {
  const others = useLoad(() => api.get<Flag[]>(apiPath`/v1/environments/${environmentId}/flags`), [environmentId, flag.version]);
  const [draft, setDraft] = useState<Prerequisite[] | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [saved, setSaved] = useState('');
  useEffect(() => setDraft(undefined), [path]);
  const current = flag.prerequisites ?? [];
  const list = draft ?? current;
  const update: DraftUpdate<Prerequisite[]> = (change) => {
    setDraft((pending) => change(pending ?? current));
    setSaved('');
  };
  const candidates = (others.data ?? []).filter((other) => other.key !== flag.key && !other.archived);
  const variantsOf = (key: string): string[] => (others.data ?? []).find((other) => other.key === key)?.variants.map((v) => v.key) ?? [];
  const unused = candidates.filter((candidate) => !list.some((p) => p.flag_key === candidate.key));
  const incomplete = list.some((p) => p.flag_key === '' || p.variant_keys.length === 0);

  const save = async () => {
    setError(undefined);
    try {
      const updated = await api.put<Flag>(path, { flag: { prerequisites: list }, version: flag.version });
      setDraft(undefined);
      setSaved('Prerequisites saved.');
      onSaved(updated);
    } catch (caught) {
      setError(caught);
    }
  };

  return (
    <>
      <h2>Prerequisites</h2>
      <p class="muted">
        Checked before the rules: each flag named here must be on and serve one of the ticked variants for the same context, or this flag serves its off
        variant ({flag.off_variant_key ?? 'none'}).
      </p>
      <form
        aria-label="Prerequisites"
        onSubmit={(event) => {
          event.preventDefault();
          void save();
        }}
      >
        {list.length === 0 && <p class="muted">No prerequisites.</p>}
        {list.map((prerequisite, i) => {
          const order = variantsOf(prerequisite.flag_key);
          return (
            <fieldset class="prerequisite" aria-label={`Prerequisite ${i + 1}`}>
              <legend>Prerequisite {i + 1}</legend>
              <label>
                Flag
                <select
                  value={prerequisite.flag_key}
                  onChange={(e) => {
                    const key = (e.target as HTMLSelectElement).value;
                    update(atIndex(i, withChange<Prerequisite>({ flag_key: key, variant_keys: [] })));
                  }}
                >
                  {prerequisite.flag_key === '' && <option value="">Choose a flag</option>}
                  {!candidates.some((c) => c.key === prerequisite.flag_key) && prerequisite.flag_key !== '' && <option value={prerequisite.flag_key}>{prerequisite.flag_key}</option>}
                  {candidates
                    .filter((c) => c.key === prerequisite.flag_key || !list.some((p) => p.flag_key === c.key))
                    .map((c) => (
                      <option value={c.key}>{c.key}</option>
                    ))}
                </select>
              </label>
              {prerequisite.flag_key !== '' && (
                <div role="group" aria-label={`Variants of ${prerequisite.flag_key} that satisfy it`}>
                  Serves one of:{' '}
                  {order.map((variantKey) => (
                    <label class="inline">
                      <input
                        type="checkbox"
                        checked={prerequisite.variant_keys.includes(variantKey)}
                        onChange={(e) => update(atIndex(i, withVariant(order, variantKey, (e.target as HTMLInputElement).checked)))}
                      />
                      {variantKey}
                    </label>
                  ))}
                </div>
              )}
              <button type="button" onClick={() => update((current) => current.filter((_, j) => j !== i))}>
                Remove prerequisite {i + 1}
              </button>
            </fieldset>
          );
        })}
        <div class="row">
          <button
            type="button"
            disabled={unused.length === 0 || list.length >= MAX_PREREQUISITES}
            onClick={() => update((current) => [...current, { flag_key: '', variant_keys: [] }])}
          >
            Add prerequisite
          </button>
          <button type="submit" disabled={draft === undefined || incomplete}>
            Save prerequisites
          </button>
          {draft !== undefined && (
            <button type="button" onClick={() => setDraft(undefined)}>
              Discard changes
            </button>
          )}
        </div>
        <SaveProblem
          error={error}
          onReload={() => {
            setError(undefined);
            setDraft(undefined);
            onReload();
          }}
        />
        <ErrorMessage error={others.error} />
        <p role="status">{saved}</p>
      </form>
    </>
  );
}
