import type { Rule, Variant } from '../model/definitions.ts';

/**
 * The default rule (docs/contract.md "Flags and evaluation", "Default rule"): the last rule of a
 * flag, unconditional, so that a flag switched on serves something chosen instead of falling
 * through to its off variant. This module imports types only, so the console can bundle it alone
 * (`@switchyard/core/default-rule`) without the evaluation engine.
 */

/** The id of the rule defaultRuleFor writes. */
export const DEFAULT_RULE_ID = 'default';

/**
 * The default rule a new flag gets: one unconditional rule, id `default`, serving the first
 * variant whose key is not `offVariantKey`. For a bool flag (every variant's value a boolean) the
 * first such variant whose value is `true` is preferred, so "on" serves `true` whatever the order
 * the variants were written in (`[{off: false}, {on: true}]` with no off variant serves `on`); with
 * no `true` variant left it is the first non-off one again. `null` when every variant is the off
 * variant (or there are none): such a flag has nothing to serve but its off variant.
 */
export function defaultRuleFor(variants: readonly Variant[], offVariantKey: string | null): Rule | null {
  const candidates = variants.filter((variant) => variant.key !== offVariantKey);
  const isBool = variants.length > 0 && variants.every((variant) => typeof variant.value === 'boolean');
  const served = (isBool ? candidates.find((variant) => variant.value === true) : undefined) ?? candidates[0];
  return served === undefined ? null : { id: DEFAULT_RULE_ID, conditions: [], variant_key: served.key };
}

/** The rules a flag starts with in an environment: `[defaultRuleFor(...)]`, or `[]` when there is none. */
export function initialRulesFor(variants: readonly Variant[], offVariantKey: string | null): Rule[] {
  const rule = defaultRuleFor(variants, offVariantKey);
  return rule === null ? [] : [rule];
}

/**
 * Whether a rule matches every input as far as its targeting goes: no conditions and no segments.
 * It may serve a variant or a percentage split (a split whose hash input is missing still does not
 * match: docs/contract.md "Bucketing").
 */
export function isUnconditionalRule(rule: Rule): boolean {
  return (rule.conditions ?? []).length === 0 && (rule.segment_keys ?? []).length === 0;
}

/**
 * Whether the flag's rules end with a default rule (an unconditional last rule). A flag that is
 * on without one serves its off variant (reason `DEFAULT`) to every input no rule matches: the
 * console warns about it.
 */
export function hasDefaultRule(rules: readonly Rule[]): boolean {
  const last = rules[rules.length - 1];
  return last !== undefined && isUnconditionalRule(last);
}
