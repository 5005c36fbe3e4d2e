import type { EvaluationResult } from '../model/evaluation.ts';

/**
 * The `rule_id` an exposure of this evaluation records: the rule whose percentage allocation
 * served the variant, or '' when no allocation did (a targeted variant, the default, the off
 * variant). An experiment counts only the contexts its rule's allocation served
 * (docs/statistics.md "Who is in an experiment"): a targeted user would otherwise join whichever
 * variant the targeting gives and skew the split.
 */
export function exposureRuleOf(result: Pick<EvaluationResult, 'reason' | 'rule_id'>): string {
  return result.reason === 'SPLIT' ? (result.rule_id ?? '') : '';
}
