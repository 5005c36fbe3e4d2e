import { apiPath } from '../api.ts';
import { useEffect, useState } from 'preact/hooks';
import type { EnvironmentPageProps } from '../app.tsx';
import { ErrorMessage, Loading, useLoad } from '../components/common.tsx';
import { BeforeAfter } from '../components/history-list.tsx';
import {
  PART_LABELS,
  copyBody,
  describeDifference,
  describeSegment,
  describeValue,
  describeWritten,
  fieldLabel,
  plannedChanges,
  segmentsToCopy,
  type PlannedFlagChange,
} from '../components/environment-compare.ts';
import type { CopyPart, EnvironmentComparison, EnvironmentCopyRecord } from '../records.ts';
import { hrefOf, navigate } from '../router.ts';

const PARTS: CopyPart[] = ['rules', 'enabled', 'prerequisites', 'segments'];

/**
 * Compare and copy (docs/console.md "Compare and copy environments"): this environment (the
 * target) against another of the project (the source, in the address: `#/env/{target}/compare/{from}`),
 * the flags that differ field by field, and a copy of chosen flags and parts after a confirmation
 * that lists every change. A protected target asks as every write there does (the Api's dialog).
 */
export function ComparePage({ workspace, environment, project, fromId }: EnvironmentPageProps & { fromId: string | undefined }) {
  const { api } = workspace;
  const others = workspace.environments.filter((e) => e.project_id === project.project_id && e.environment_id !== environment.environment_id);
  const from = others.find((e) => e.environment_id === fromId) ?? others[0];
  const comparison = useLoad(
    async () => (from ? api.get<EnvironmentComparison>(`${apiPath`/v1/environments/${environment.environment_id}/compare`}?from_environment_id=${encodeURIComponent(from.environment_id)}`) : undefined),
    [environment.environment_id, from?.environment_id],
  );
  const [chosen, setChosen] = useState<Set<string>>(new Set());
  const [include, setInclude] = useState<CopyPart[]>(['rules', 'enabled']);
  const [confirming, setConfirming] = useState<PlannedFlagChange[] | undefined>(undefined);
  const [done, setDone] = useState('');
  // Another pair of environments: nothing chosen, nothing pending.
  useEffect(() => {
    setChosen(new Set());
    setConfirming(undefined);
  }, [environment.environment_id, from?.environment_id]);

  if (!from) {
    return (
      <section>
        <h1>Compare {environment.environment_name}</h1>
        <p>{project.project_name} has no other environment to compare with.</p>
      </section>
    );
  }
  const differences = comparison.data?.flags ?? [];
  const toggle = (part: CopyPart, on: boolean) => {
    const next = new Set(include);
    if (on) next.add(part);
    else next.delete(part);
    // Segments go with the rules that name them.
    if (part === 'rules' && !on) next.delete('segments');
    setInclude(PARTS.filter((p) => next.has(p)));
  };
  const planned = plannedChanges(differences, chosen, include);
  return (
    <section>
      <h1>
        Compare {environment.environment_name} with {from.environment_name}
      </h1>
      <label>
        Compare with (copies come from it)
        <select
          value={from.environment_id}
          onChange={(event) => navigate({ envId: environment.environment_id, page: 'compare', id: (event.target as HTMLSelectElement).value })}
        >
          {others.map((e) => (
            <option value={e.environment_id}>{e.environment_name}</option>
          ))}
        </select>
      </label>
      <p class="muted">
        Each row is a flag whose configuration in {environment.environment_name} differs from {from.environment_name}: {environment.environment_name}'s value → {from.environment_name}'s (what a copy writes).
      </p>
      <ErrorMessage error={comparison.error} />
      {comparison.loading && !comparison.data && <Loading what="the comparison" />}
      {comparison.data && differences.length === 0 && (
        <p>
          No flag differs between {environment.environment_name} and {from.environment_name} ({comparison.data.compared} compared).
        </p>
      )}
      {differences.length > 0 && (
        <table class="list">
          <caption class="visually-hidden">
            Flags that differ between {environment.environment_name} and {from.environment_name}
          </caption>
          <thead>
            <tr>
              <th scope="col">Copy</th>
              <th scope="col">Flag</th>
              <th scope="col">Differences</th>
            </tr>
          </thead>
          <tbody>
            {differences.map((flag) => {
              const written = describeWritten(flag, from.environment_name, environment.environment_name);
              return (
                <tr data-testid={`difference-${flag.flag_key}`}>
                  <td>
                    <input
                      type="checkbox"
                      aria-label={`Copy ${flag.flag_key}`}
                      checked={chosen.has(flag.flag_key)}
                      onChange={(event) => {
                        const next = new Set(chosen);
                        if ((event.target as HTMLInputElement).checked) next.add(flag.flag_key);
                        else next.delete(flag.flag_key);
                        setChosen(next);
                      }}
                    />
                  </td>
                  <td>
                    <a href={hrefOf({ envId: environment.environment_id, page: 'flags', id: flag.flag_key })}>{flag.flag_key}</a>
                    {flag.archived && <div class="muted">archived</div>}
                    {written && <div class="muted">{written}</div>}
                  </td>
                  <td>
                    <ul>
                      {flag.fields.map((difference) => (
                        <li>
                          {describeDifference(difference)}
                          {typeof difference.after === 'object' && difference.after !== null && (
                            <details>
                              <summary>
                                {fieldLabel(difference.field)} in {environment.environment_name} (before) and {from.environment_name} (after)
                              </summary>
                              <BeforeAfter before={difference.before} after={difference.after} />
                            </details>
                          )}
                        </li>
                      ))}
                      {flag.segments.map((segment) => (
                        <li class="muted">{describeSegment(segment, environment.environment_name)}</li>
                      ))}
                    </ul>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {differences.length > 0 && (
        <fieldset>
          <legend>What to copy</legend>
          {PARTS.map((part) => (
            <label class="switch">
              <input type="checkbox" checked={include.includes(part)} disabled={part === 'segments' && !include.includes('rules')} onChange={(event) => toggle(part, (event.target as HTMLInputElement).checked)} />
              <span>{PART_LABELS[part]}</span>
            </label>
          ))}
          <div class="row">
            <button type="button" disabled={include.length === 0 || planned.length === 0} onClick={() => (setDone(''), setConfirming(planned))}>
              Review the copy into {environment.environment_name}
            </button>
            <span class="muted">{chosen.size === 0 ? 'Choose flags to copy.' : planned.length === 0 ? 'Nothing of what you chose differs.' : `${planned.length} flag${planned.length === 1 ? '' : 's'} would change.`}</span>
          </div>
        </fieldset>
      )}
      <p role="status">{done}</p>
      {confirming && (
        <CopyConfirmation
          key={confirming.map((flag) => flag.flag_key).join()}
          planned={confirming}
          targetName={environment.environment_name}
          fromName={from.environment_name}
          onCancel={() => setConfirming(undefined)}
          onConfirm={async () => {
            const record = await api.post<EnvironmentCopyRecord>(apiPath`/v1/environments/${environment.environment_id}/copy`, copyBody(from.environment_id, confirming, include));
            const flags = record.flags.filter((flag) => flag.fields.length > 0).length;
            setDone(
              `Copied ${flags} flag${flags === 1 ? '' : 's'}${record.segments.length > 0 ? ` and ${record.segments.length} segment${record.segments.length === 1 ? '' : 's'}` : ''} from ${from.environment_name} into ${environment.environment_name}.`,
            );
            setConfirming(undefined);
            setChosen(new Set());
            comparison.reload();
          }}
        />
      )}
    </section>
  );
}

/** The confirmation: every change the copy makes, flag by flag, then the segments; nothing is sent before "Copy". */
function CopyConfirmation(props: { planned: PlannedFlagChange[]; targetName: string; fromName: string; onConfirm: () => Promise<void>; onCancel: () => void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const segments = segmentsToCopy(props.planned);
  const rollouts = props.planned.filter((flag) => flag.copiesRollout);
  return (
    <div class="modal-backdrop">
      <div class="confirm modal" role="dialog" aria-modal="true" aria-labelledby="copy-title" onKeyDown={(event) => event.key === 'Escape' && props.onCancel()}>
        <h2 id="copy-title">
          Copy {props.planned.length} flag{props.planned.length === 1 ? '' : 's'} from {props.fromName} into {props.targetName}?
        </h2>
        <ul data-testid="copy-changes">
          {props.planned.map((flag) => (
            <li>
              <strong>{flag.flag_key}</strong>
              <ul>
                {flag.changes.map((change) => (
                  <li>
                    {fieldLabel(change.field)}: {describeValue(change.field, change.before)} → {describeValue(change.field, change.after)}
                  </li>
                ))}
              </ul>
            </li>
          ))}
        </ul>
        {segments.length > 0 && (
          <p>
            Segments written in {props.targetName}: {segments.map((segment) => `${segment.segment_key} (${segment.status === 'missing' ? 'created' : 'updated'})`).join(', ')}.
          </p>
        )}
        {rollouts.length > 0 && (
          <p class="warning-inline" role="note">
            ⚠ {rollouts.map((flag) => flag.flag_key).join(', ')}: a percentage rollout picks other users in {props.targetName} than in {props.fromName} (the environment is part of the
            bucketing), unless the flag buckets by project.
          </p>
        )}
        <ErrorMessage error={error} />
        <div class="row">
          <button
            type="button"
            class="danger"
            disabled={busy}
            onClick={async () => {
              setBusy(true);
              setError(undefined);
              try {
                await props.onConfirm();
              } catch (caught) {
                setError(caught);
              } finally {
                setBusy(false);
              }
            }}
          >
            Copy into {props.targetName}
          </button>
          <button type="button" onClick={props.onCancel}>
            Cancel
          </button>
        </div>
      </div>
    </div>
  );
}
