import type { Flag, Rule } from '../records.ts';

/**
 * The default rule as the console shows it (docs/contract.md "Flags and evaluation": the last rule
 * is the default fallback): the last rule of a flag when it is unconditional, that is, it has no
 * conditions and no segments. A flag that is on without one serves its off variant to every
 * context no rule matches, so the flag list and page warn about it.
 */
export function isUnconditional(rule: Rule): boolean {
  return (rule.conditions ?? []).length === 0 && (rule.segment_keys ?? []).length === 0;
}

/** Whether the rules end with an unconditional rule: the flag's default rule. */
export function hasDefaultRule(rules: readonly Rule[]): boolean {
  const last = rules[rules.length - 1];
  return last !== undefined && isUnconditional(last);
}

/** On, with nothing chosen for contexts no rule matches: they get the off variant (reason DEFAULT). */
export function needsDefaultRuleWarning(flag: Pick<Flag, 'enabled' | 'rules'>): boolean {
  return flag.enabled && !hasDefaultRule(flag.rules);
}

/**
 * The default rule the console adds on request: unconditional, serving the first variant that is
 * not the off variant (the first variant when every one is), as the API's own default rule does
 * for a flag created without rules.
 */
export function newDefaultRule(flag: Pick<Flag, 'variants' | 'off_variant_key'>): Rule {
  const served = flag.variants.find((v) => v.key !== flag.off_variant_key) ?? flag.variants[0];
  return { id: 'default', conditions: [], variant_key: served?.key ?? '' };
}
