import {
  checkFlagMatchesBudget,
  failedPrecondition,
  invalidArgument,
  referencedSegmentKeys,
  studiedRule,
  withMetadataDefaults,
  type EnvironmentScope,
  type Flag,
  type Repositories,
  type Rule,
} from '@switchyard/core';

/**
 * The checks of a flag's state write in one environment that need the store, shared by every
 * writer of a state: a person's write (FlagService) and a copy from another environment
 * (EnvironmentCopyService), so that both refuse the same states with the same messages. Called
 * with the repositories of whoever reads them: a copy passes its unit of work's, so the segments
 * it created in that unit are seen.
 */

/**
 * The segments the rules name must exist, and the flag's regular-expression budget covers their
 * patterns too (checkFlagMatchesBudget; the segment service checks the other direction).
 */
export async function checkSegmentReferences(repos: Pick<Repositories, 'segments'>, environment: EnvironmentScope, rules: Rule[]): Promise<void> {
  const wanted = referencedSegmentKeys(rules);
  if (wanted.length === 0) return;
  const existing = new Map((await repos.segments.list(environment)).map((s) => [s.key, s]));
  const missing = wanted.filter((key) => !existing.has(key));
  if (missing.length > 0) throw invalidArgument(`rules reference segments that do not exist in this environment: ${missing.join(', ')}`, 'rules');
  checkFlagMatchesBudget(rules, existing);
}

/**
 * An ACTIVE experiment on the flag keeps the rule it studies (docs/statistics.md "Who is in an
 * experiment"): a change of rules that removes that rule, takes its allocation off the
 * experiment's arms, or (for an experiment on the default rule) makes another rule the studied
 * one is refused, naming the experiments. Pausing or concluding the experiment first lets the
 * change through; refusing, rather than pausing the experiment behind the writer's back, keeps
 * a flag edit from silently stopping an experiment someone else runs.
 */
export async function checkStudiedRules(repos: Pick<Repositories, 'experiments'>, environment: EnvironmentScope, current: Flag, rules: Rule[]): Promise<void> {
  const active = (await repos.experiments.list(environment)).filter(
    (experiment) => experiment.flagKey === current.key && experiment.status === 'EXPERIMENT_STATUS_ACTIVE',
  );
  const problems: string[] = [];
  for (const experiment of active) {
    const before = studiedRule(current, experiment);
    const after = studiedRule({ key: current.key, rules }, experiment);
    const beforeId = 'rule' in before ? before.rule.id : null;
    if ('reason' in after) problems.push(`experiment '${experiment.name || experiment.id}' studies rule '${beforeId ?? '?'}': ${after.reason}`);
    else if (beforeId !== null && after.rule.id !== beforeId) {
      problems.push(`experiment '${experiment.name || experiment.id}' studies rule '${beforeId}', and the change would make it study rule '${after.rule.id}'`);
    }
  }
  if (problems.length > 0) {
    throw failedPrecondition(`the rules of an ACTIVE experiment's flag must keep its studied rule (pause or conclude it first): ${problems.join('; ')}`);
  }
}

/**
 * A flag as the API shows it: `prerequisites` always present, [] when none, and the metadata at its defaults when unset (the stored
 * documents, the evaluation snapshots and the change history leave it out then, as core does).
 */
export const asShown = (flag: Flag): Flag => withMetadataDefaults(flag.prerequisites === undefined ? { ...flag, prerequisites: [] } : flag);

/**
 * After a state write, inside its unit of work: the written rules and off variant name only the
 * flag's variants as they are now. The rules were checked against the variants read before the
 * write; a variant removed in between (its removal's own check ran before this write) is caught
 * here. The state write holds the flag's lock to the commit, so a removal that comes later sees
 * this state and refuses (the repositories' updateDefinition): one of the two always fails.
 * @throws FAILED_PRECONDITION, which rolls the write back.
 */
export function servesOnlyItsVariants(flag: Flag): void {
  const known = new Set(flag.variants.map((variant) => variant.key));
  const named = [...flag.rules.flatMap((rule) => [rule.variant_key, ...(rule.allocation?.buckets ?? []).map((bucket) => bucket.variant_key)]), flag.off_variant_key];
  const missing = [...new Set(named.filter((variantKey): variantKey is string => typeof variantKey === 'string' && !known.has(variantKey)))];
  if (missing.length > 0) throw failedPrecondition(`the flag no longer has the variant ${missing.map((v) => `'${v}'`).join(', ')}: it was removed meanwhile; read the flag again`);
}
