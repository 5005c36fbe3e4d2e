import type { Condition, Flag, Rule, Segment } from '../records.ts';
import type { DraftUpdate } from './experiment-setup.ts';
import { atIndex, withChange, withWeight } from './draft-updates.ts';

/** The condition operators (docs/contract.md "Flags and evaluation"), with words for people. */
export const OPERATORS: Array<[Condition['op'], string]> = [
  ['eq', 'is'],
  ['in', 'is one of'],
  ['contains', 'contains'],
  ['starts_with', 'starts with'],
  ['ends_with', 'ends with'],
  ['matches', 'matches (RE2)'],
  ['lt', '<'],
  ['lte', '≤'],
  ['gt', '>'],
  ['gte', '≥'],
  ['semver_eq', 'version ='],
  ['semver_lt', 'version <'],
  ['semver_gt', 'version >'],
  ['before', 'before (date)'],
  ['after', 'after (date)'],
  ['exists', 'is present'],
];

const NUMERIC = new Set(['lt', 'lte', 'gt', 'gte']);

/** What a rule serves, in words: "serves on" or "serves 30 % treatment, 70 % control". */
export function servedText(rule: Rule): string {
  if (!rule.allocation) return `serves ${rule.variant_key ?? '—'}`;
  return `serves ${rule.allocation.buckets.map((b) => `${b.weight_milli / 10} % ${b.variant_key}`).join(', ')}`;
}

/** A condition in words: "country is one of fr, de", "not plan is free". */
function conditionText(condition: Condition): string {
  const words = OPERATORS.find(([op]) => op === condition.op)?.[1] ?? condition.op;
  const values = condition.op === 'exists' ? '' : ` ${condition.values.map(String).join(', ')}`;
  return `${condition.negate ? 'not ' : ''}${condition.attribute} ${words}${values}`;
}

/** One line about a rule: who it matches (conditions and segments) and what it serves. */
export function ruleSummary(rule: Rule): string {
  const parts = (rule.conditions ?? []).map(conditionText);
  const segments = rule.segment_keys ?? [];
  if (segments.length > 0) parts.push(`in segment${segments.length === 1 ? '' : 's'} ${segments.join(' and ')}`);
  return `${parts.length === 0 ? 'Every context' : `Contexts where ${parts.join(' and ')}`}: ${servedText(rule)}`;
}

/** Values as typed ("a, b") → the condition's values: numbers for numeric operators. */
export function parseValues(op: string, text: string): Condition['values'] {
  if (op === 'exists') return [];
  const parts = op === 'matches' ? [text.trim()] : text.split(',').map((part) => part.trim());
  return parts.filter((part) => part !== '').map((part) => (NUMERIC.has(op) && part !== '' && !Number.isNaN(Number(part)) ? Number(part) : part));
}

export const valuesText = (condition: Condition): string => condition.values.map(String).join(', ');

/** A rule's split as percentages per variant (0.1 % steps); the rule serves a fixed variant when absent. */
export function weightsOf(rule: Rule): Record<string, number> | undefined {
  if (!rule.allocation) return undefined;
  return Object.fromEntries(rule.allocation.buckets.map((b) => [b.variant_key, b.weight_milli / 10]));
}

export function totalPercent(rule: Rule): number {
  return (rule.allocation?.buckets ?? []).reduce((sum, b) => sum + b.weight_milli, 0) / 10;
}

interface RuleEditorProps {
  flag: Flag;
  rule: Rule;
  index: number;
  count: number;
  /** The environment's segments, for the picker (undefined while they load). */
  segments: Segment[] | undefined;
  /** The id of a datalist of attribute names to suggest. */
  attributeListId?: string;
  /** The id of a datalist for a condition naming its context type, when there is one. */
  attributeListIdFor?: (contextType: string) => string | undefined;
  /** The flag's default rule: no conditions or segments, shown last, cannot move. */
  isDefault?: boolean;
  /** Changes the rule as it is when the change applies (see `DraftUpdate`). */
  onChange: DraftUpdate<Rule>;
  onRemove: () => void;
  onMove: (delta: number) => void;
}

export function RuleEditor({ flag, rule, index, count, segments, attributeListId, attributeListIdFor, isDefault = false, onChange, onRemove, onMove }: RuleEditorProps) {
  const id = isDefault ? 'default-rule' : `rule-${index}`;
  const name = isDefault ? 'Default rule' : `Rule ${index + 1}`;
  const weights = weightsOf(rule);
  const total = totalPercent(rule);
  return (
    <fieldset class={isDefault ? 'rule default-rule' : 'rule'} aria-labelledby={`${id}-title`}>
      <legend id={`${id}-title`}>
        {name}
        {rule.id && !isDefault ? ` (${rule.id})` : ''}
      </legend>
      <p class="summary">{ruleSummary(rule)}</p>
      {isDefault ? (
        <p class="muted">Serves every context that no rule above matches.</p>
      ) : (
        <>
          <label>
            Description
            <input value={rule.description ?? ''} onInput={(e) => onChange(withChange<Rule>({ description: (e.target as HTMLInputElement).value }))} />
          </label>
          <p class="muted">{rule.conditions.length === 0 && (rule.segment_keys ?? []).length === 0 ? 'No conditions: every context matches, and the rules below it are not reached.' : 'Every condition must hold.'}</p>
          <ConditionsEditor
            label={name}
            conditions={rule.conditions}
            attributeListId={attributeListId}
            {...(attributeListIdFor ? { attributeListIdFor } : {})}
            onChange={(update) => onChange((current) => ({ ...current, conditions: update(current.conditions) }))}
          />
          <SegmentPicker name={name} chosen={rule.segment_keys ?? []} segments={segments} onChange={(update) => onChange((current) => ({ ...current, segment_keys: update(current.segment_keys ?? []) }))} />
        </>
      )}
      <div role="radiogroup" aria-label={`${name} serves`} class="serve">
        <label>
          <input
            type="radio"
            name={`${id}-serve`}
            checked={!weights}
            onChange={() => onChange((current) => ({ id: current.id, description: current.description, conditions: current.conditions, segment_keys: current.segment_keys, variant_key: flag.variants[0]?.key ?? '' }))}
          />
          A variant
        </label>
        <label>
          <input
            type="radio"
            name={`${id}-serve`}
            checked={weights !== undefined}
            onChange={() => {
              const even = Math.floor(1000 / flag.variants.length);
              const buckets = flag.variants.map((v, i) => ({ variant_key: v.key, weight_milli: i === 0 ? 1000 - even * (flag.variants.length - 1) : even }));
              onChange((current) => ({ id: current.id, description: current.description, conditions: current.conditions, segment_keys: current.segment_keys, allocation: { context_hash_specs: current.allocation?.context_hash_specs ?? {}, buckets } }));
            }}
          />
          A percentage rollout
        </label>
      </div>
      {!weights && (
        <label>
          Variant
          <select value={rule.variant_key} onChange={(e) => onChange(withChange<Rule>({ variant_key: (e.target as HTMLSelectElement).value }))}>
            {flag.variants.map((v) => (
              <option value={v.key}>{v.key}</option>
            ))}
          </select>
        </label>
      )}
      {weights && (
        <div class="weights">
          {flag.variants.map((v) => (
            <label>
              {v.key} %
              <input
                type="number"
                min="0"
                max="100"
                step="0.1"
                value={weights[v.key] ?? 0}
                onInput={(e) => onChange(withWeight(flag.variants.map((variant) => variant.key), v.key, Number((e.target as HTMLInputElement).value)))}
              />
            </label>
          ))}
          <p class={total === 100 ? 'muted' : 'error'} role="status">
            {total === 100 ? 'The weights sum to 100 %.' : `The weights sum to ${total} %; they must sum to 100 %.`}
          </p>
        </div>
      )}
      <div class="row">
        {!isDefault && (
          <>
            <button type="button" disabled={index === 0} onClick={() => onMove(-1)}>
              Move up
            </button>
            <button type="button" disabled={index === count - 1} onClick={() => onMove(1)}>
              Move down
            </button>
          </>
        )}
        <button type="button" class="danger" onClick={onRemove}>
          {isDefault ? 'Remove the default rule' : `Remove rule ${index + 1}`}
        </button>
      </div>
    </fieldset>
  );
}

/**
 * The segments a rule requires (the context must be in all): each chosen one with a remove
 * button, and a select of the environment's other segments to add one. A chosen key that is not
 * in the environment (deleted meanwhile) stays listed, marked, so saving says so in the API's words.
 */
function SegmentPicker({ name, chosen, segments, onChange }: { name: string; chosen: string[]; segments: Segment[] | undefined; onChange: DraftUpdate<string[]> }) {
  const known = new Set((segments ?? []).map((s) => s.key));
  const available = (segments ?? []).filter((s) => !chosen.includes(s.key));
  return (
    <div class="segments" role="group" aria-label={`${name}, segments`}>
      <p class="muted">{chosen.length === 0 ? 'Segments: none.' : 'Segments (the context must be in every one):'}</p>
      {chosen.length > 0 && (
        <ul>
          {chosen.map((key) => (
            <li>
              <code>{key}</code>
              {segments && !known.has(key) ? ' (not in this environment)' : ''}{' '}
              <button type="button" class="link" onClick={() => onChange((current) => current.filter((k) => k !== key))}>
                Remove segment {key}
              </button>
            </li>
          ))}
        </ul>
      )}
      <label>
        Add a segment
        <select
          value=""
          disabled={available.length === 0}
          onChange={(e) => {
            const key = (e.target as HTMLSelectElement).value;
            if (key) onChange((current) => [...current, key]);
          }}
        >
          <option value="">{segments === undefined ? 'Loading segments…' : available.length === 0 ? 'No other segment in this environment' : 'Choose a segment'}</option>
          {available.map((s) => (
            <option value={s.key}>{`${s.key} (${s.kind}, ${s.context_type})`}</option>
          ))}
        </select>
      </label>
    </div>
  );
}

/**
 * Rows of conditions (attribute, not, operator, values) with add and remove: flag rules and rule
 * segments. A condition naming its context type gets that type's suggestions when there are some.
 */
export function ConditionsEditor({
  label,
  conditions,
  attributeListId,
  attributeListIdFor,
  onChange,
}: {
  label: string;
  conditions: Condition[];
  attributeListId?: string;
  attributeListIdFor?: (contextType: string) => string | undefined;
  /** Changes the conditions as they are when the change applies (see `DraftUpdate`). */
  onChange: DraftUpdate<Condition[]>;
}) {
  const setCondition = (i: number, change: Partial<Condition>) => onChange(atIndex(i, withChange<Condition>(change)));
  return (
    <>
      {conditions.map((condition, i) => (
        <div class="condition" role="group" aria-label={`${label}, condition ${i + 1}`}>
          <label>
            Attribute
            <input required list={(condition.context_type ? attributeListIdFor?.(condition.context_type) : undefined) ?? attributeListId} value={condition.attribute} onInput={(e) => setCondition(i, { attribute: (e.target as HTMLInputElement).value })} />
          </label>
          <label>
            <input type="checkbox" checked={condition.negate === true} onChange={(e) => setCondition(i, { negate: (e.target as HTMLInputElement).checked })} />
            not
          </label>
          <label>
            Operator
            <select value={condition.op} onChange={(e) => setCondition(i, { op: (e.target as HTMLSelectElement).value as Condition['op'] })}>
              {OPERATORS.map(([op, words]) => (
                <option value={op}>{words}</option>
              ))}
            </select>
          </label>
          {condition.op !== 'exists' && (
            <label>
              Values (comma-separated)
              <input required value={valuesText(condition)} onChange={(e) => {
                  const text = (e.target as HTMLInputElement).value;
                  onChange(atIndex(i, (current: Condition) => ({ ...current, values: parseValues(current.op, text) })));
                }} />
            </label>
          )}
          <button type="button" class="link" onClick={() => onChange((current) => current.filter((_, j) => j !== i))}>
            Remove condition {i + 1}
          </button>
        </div>
      ))}
      <button type="button" onClick={() => onChange((current) => [...current, { attribute: '', op: 'eq', values: [] }])}>
        Add condition
      </button>
    </>
  );
}
