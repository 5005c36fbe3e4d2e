import { ApiError } from '../api.ts';
import type { EventDefinition, Flag } from '../records.ts';
import { AnalysisFields } from './analysis-fields.tsx';
import { allocatingRules, type SetupDraft } from './experiment-setup.ts';
import { MetricRows } from './metric-rows.tsx';

const valueOf = (event: Event) => (event.target as HTMLSelectElement).value;

export interface SetupFieldsProps {
  draft: SetupDraft;
  onChange: (draft: SetupDraft) => void;
  /** The variants the control is chosen from. */
  variantKeys: string[];
  /** The experiment's flag, for its rules (undefined while it loads or none is chosen). */
  flag: Flag | undefined;
  definitions: EventDefinition[];
  /** The control and rule can change (a new experiment, or one in DRAFT). */
  design: boolean;
}

/**
 * The setup of an experiment (docs/contract.md "Experiments"): the control and the studied rule
 * (in DRAFT only), the metric definitions and the analysis settings.
 */
export function SetupFields({ draft, onChange, variantKeys, flag, definitions, design }: SetupFieldsProps) {
  const rules = allocatingRules(flag);
  const set = (patch: Partial<SetupDraft>) => onChange({ ...draft, ...patch });
  return (
    <>
      {design ? (
        <fieldset class="inline">
          <legend>Design</legend>
          <label>
            Control
            <select required value={draft.control} onChange={(e) => set({ control: valueOf(e) })}>
              {variantKeys.length === 0 && <option value="">No variants yet</option>}
              {variantKeys.map((key) => (
                <option value={key}>
                  {key}
                  {key === flag?.off_variant_key ? ' (the off variant)' : ''}
                </option>
              ))}
            </select>
          </label>
          <label>
            Studied rule
            <select value={draft.ruleId} onChange={(e) => set({ ruleId: valueOf(e) })}>
              <option value="">First rule with an allocation{rules[0] ? ` (now ${rules[0].id})` : ''}</option>
              {rules.map((rule) => (
                <option value={rule.id}>
                  {rule.id}
                  {rule.description ? ` — ${rule.description}` : ''}
                </option>
              ))}
            </select>
          </label>
          {flag && rules.length === 0 && <p class="warning-inline">The flag has no rule with an allocation: add one (a percentage split) before starting the experiment.</p>}
        </fieldset>
      ) : (
        <p class="muted">The control and the studied rule are fixed once the experiment has started.</p>
      )}
      <MetricRows metrics={draft.metrics} definitions={definitions} onChange={(metrics) => set({ metrics })} />
      <AnalysisFields draft={draft.analysis} onChange={(analysis) => set({ analysis })} />
    </>
  );
}

/**
 * The API's refusal with its code, so that the person can tell "metrics[1].capping.lower must be
 * …" (INVALID_ARGUMENT) from a precondition; conflicts and denials keep their own words.
 */
export function withCode(error: unknown): unknown {
  if (error instanceof ApiError && error.status >= 400 && error.status !== 403 && !error.isConflict && error.code !== 'UNKNOWN') {
    return new ApiError(error.status, error.code, `${error.message} (${error.code})`);
  }
  return error;
}
