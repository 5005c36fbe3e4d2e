import type { Flag, Rule } from '../model/definitions.ts';

/** What an experiment needs from its flag to pick the rule it studies. */
export interface StudiedRuleQuery {
  /** The named rule; null: the flag's first rule that allocates over the experiment's variants. */
  ruleId: string | null;
  variantKeys: readonly string[];
  controlVariantKey: string;
}

/**
 * Whether a rule's percentage allocation splits traffic between the experiment's arms: a positive
 * weight for the control and for at least one other of the experiment's variants. A rule that
 * sends nobody to the control, or only to the control, cannot produce a comparison.
 */
export function allocatesOver(rule: Rule, query: Pick<StudiedRuleQuery, 'variantKeys' | 'controlVariantKey'>): boolean {
  const weighted = new Set((rule.allocation?.buckets ?? []).filter((bucket) => bucket.weight_milli > 0).map((bucket) => bucket.variant_key));
  return weighted.has(query.controlVariantKey) && query.variantKeys.some((key) => key !== query.controlVariantKey && weighted.has(key));
}

/**
 * The rule whose allocation the experiment studies (docs/decisions.md "Experiments and
 * statistics"), or why there is none: the named rule is gone or does not allocate over the
 * variants, or (no rule named) no rule of the flag does. Starting the experiment needs a rule.
 */
export function studiedRule(flag: Pick<Flag, 'key' | 'rules'>, query: StudiedRuleQuery): { rule: Rule } | { reason: string } {
  const arms = `the control '${query.controlVariantKey}' and another of the experiment's variants (${query.variantKeys.join(', ')})`;
  if (query.ruleId !== null) {
    const rule = flag.rules.find((candidate) => candidate.id === query.ruleId);
    if (!rule) return { reason: `rule '${query.ruleId}' is no longer a rule of flag '${flag.key}'` };
    if (!allocatesOver(rule, query)) return { reason: `rule '${query.ruleId}' of flag '${flag.key}' has no percentage allocation giving traffic to ${arms}` };
    return { rule };
  }
  const rule = flag.rules.find((candidate) => allocatesOver(candidate, query));
  return rule ? { rule } : { reason: `flag '${flag.key}' has no rule with a percentage allocation giving traffic to ${arms}` };
}
