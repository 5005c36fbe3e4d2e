import type { Flag } from '../model/definitions.ts';

/**
 * What in one environment's flag serves a variant: the rules naming it (as their variant or in a
 * rollout bucket, weight 0 included: the rule still names it) and the off variant. A variant
 * with no use in any environment of the project may be removed (docs/contract.md "Flags").
 */
export function variantUses(flag: Pick<Flag, 'rules' | 'off_variant_key'>, variantKey: string): string[] {
  const uses: string[] = [];
  for (const rule of flag.rules) {
    if (rule.variant_key === variantKey || rule.allocation?.buckets.some((b) => b.variant_key === variantKey)) uses.push(`rule '${rule.id}'`);
  }
  if (flag.off_variant_key === variantKey) uses.push('the off variant');
  return uses;
}
