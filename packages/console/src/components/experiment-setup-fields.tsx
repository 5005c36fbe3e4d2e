import { ApiError } from '../api.ts';
import type { EventDefinition, Flag } from '../records.ts';
import { AnalysisFields } from './analysis-fields.tsx';
import { allocatingRules, defaultStudiedRule, splitsControl, type DraftUpdate, type SetupDraft } from './experiment-setup.ts';
import { MetricRows } from './metric-rows.tsx';

const valueOf = (event: Event) => (event.target as HTMLSelectElement).value;

export interface SetupFieldsProps {
  draft: SetupDraft;
  onChange: DraftUpdate<SetupDraft>;
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
  const fallback = defaultStudiedRule(flag, variantKeys, draft.control);
  const chosen = rules.find((rule) => rule.id === draft.ruleId);
  const studied = draft.ruleId === '' ? fallback : chosen && splitsControl(chosen, variantKeys, draft.control) ? chosen : undefined;
  const set = (patch: Partial<SetupDraft>) => onChange((current) => ({ ...current, ...patch }));
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
              <option value="">The first rule splitting the control with another variant ({fallback ? `now ${fallback.id}` : 'none yet'})</option>
              {draft.ruleId !== '' && !chosen && <option value={draft.ruleId}>{draft.ruleId} (no longer a rule of the flag)</option>}
              {rules.map((rule) => (
                <option value={rule.id}>
                  {rule.id}
                  {rule.description ? ` — ${rule.description}` : ''}
                  {splitsControl(rule, variantKeys, draft.control) ? '' : ' (gives the control or the other variants no traffic)'}
                </option>
              ))}
            </select>
          </label>
          {flag && !studied && (
            <p class="warning-inline">
              {draft.ruleId === ''
                ? 'No rule of the flag splits traffic between the control and another variant: add a percentage rollout that does before starting the experiment.'
                : `Rule ${draft.ruleId} does not split traffic between the control and another variant: the experiment cannot start with it.`}
            </p>
          )}
        </fieldset>
      ) : (
        <p class="muted">The control and the studied rule are fixed once the experiment has started.</p>
      )}
      <MetricRows metrics={draft.metrics} definitions={definitions} onChange={(update) => onChange((current) => ({ ...current, metrics: update(current.metrics) }))} />
      <AnalysisFields draft={draft.analysis} onChange={(update) => onChange((current) => ({ ...current, analysis: update(current.analysis) }))} />
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
