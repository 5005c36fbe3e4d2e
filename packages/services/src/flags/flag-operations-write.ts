import {
  applyFlagOperations,
  checkOffVariant,
  checkPrerequisites,
  checkRules,
  failedPrecondition,
  notFound,
  type EnvironmentScope,
  type Flag,
  type FlagOperation,
  type Repositories,
} from '@switchyard/core';
import { recordChange, type Acting } from '../audit/audit-trail.ts';
import { asShown, checkSegmentReferences, checkStudiedRules, servesOnlyItsVariants } from './flag-state-checks.ts';

/** One change of one environment's flag made of operations (docs/workflow.md "Operations"). */
export interface FlagOperationsWrite {
  environment: EnvironmentScope;
  flagKey: string;
  operations: readonly FlagOperation[];
  /**
   * Who the change-history entry names: the person or token whose write it is, or the part of the
   * platform acting for someone (`{type: 'system', id: 'scheduler'}`; `details` then says for whom).
   * A principal's protected-environment intent applies as for any write (recordChange).
   */
  acting: Acting;
  /** The entry's action: `flag.update` for a person's write, or what the caller is (a schedule, an approved request). */
  action: string;
  details?: Record<string, unknown>;
}

/**
 * Applies operations to a flag's state in one environment, inside the caller's unit of work
 * (`tx`): the state the operations leave is checked as a person's write is (variants, rules,
 * segments and their pattern budget, an ACTIVE experiment's studied rule), written against the
 * version it was computed from (a concurrent write makes it ABORTED rather than lost), and
 * recorded. Permissions are the caller's to check: a person's route checks the person, a worker
 * checks at the time the change was made and again when it applies.
 *
 * The caller announces the change after its commit (DEFINITIONS_CHANGED_CHANNEL, for the environment).
 * @throws NOT_FOUND (no such flag), FAILED_PRECONDITION (archived; an operation that no longer
 * applies; a studied rule taken away), INVALID_ARGUMENT (a state the flag routes would refuse), ABORTED.
 */
export async function writeFlagOperations(tx: Repositories, write: FlagOperationsWrite, nowMs: number): Promise<{ before: Flag; after: Flag }> {
  const { environment, flagKey } = write;
  const current = await tx.flags.get(environment, flagKey);
  if (!current) throw notFound('flag', flagKey);
  if (current.archived) throw failedPrecondition(`flag '${flagKey}' is archived: unarchive it before changing it`);
  const next = applyFlagOperations({ enabled: current.enabled, off_variant_key: current.off_variant_key, rules: current.rules, version: current.version }, write.operations);
  // Only a set_prerequisites writes the list (its references, cycles and chain length are checked
  // by the repository's write under the environment's prerequisite lock, as a person's write is).
  const prerequisites = write.operations.some((operation) => operation.op === 'set_prerequisites') ? checkPrerequisites(flagKey, next.prerequisites ?? []) : undefined;
  const variantKeys = new Set(current.variants.map((variant) => variant.key));
  const rules = checkRules(variantKeys, next.rules);
  const offVariantKey = checkOffVariant(variantKeys, next.off_variant_key);
  await checkSegmentReferences(tx, environment, rules);
  await checkStudiedRules(tx, environment, current, rules);
  const updated = await tx.flags.updateState(environment, flagKey, { enabled: next.enabled, off_variant_key: offVariantKey, rules, ...(prerequisites === undefined ? {} : { prerequisites }) }, current.version);
  servesOnlyItsVariants(updated);
  await recordChange(
    tx,
    write.acting,
    {
      orgId: environment.orgId,
      action: write.action,
      resourceType: 'flag',
      resourceId: flagKey,
      projectId: environment.projectId,
      environmentId: environment.environmentId,
      before: asShown(current),
      after: asShown(updated),
      ...(write.details === undefined ? {} : { details: write.details }),
    },
    nowMs,
  );
  return { before: asShown(current), after: asShown(updated) };
}
