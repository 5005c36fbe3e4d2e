import type { Flag } from '../model/definitions.ts';

/**
 * Evaluation features: parts of a flag document that change what evaluation serves and that an
 * evaluator which does not know them would ignore (serving something else than the server would).
 * The sync stream names the features an environment's definitions use (docs/contract.md "Sync
 * stream", `features`), and an evaluator that meets a name it does not know refuses to evaluate
 * rather than ignore it (fails closed: the caller's default, with an error).
 *
 * - `prerequisites`: some flag lists prerequisites (Flag.prerequisites).
 * - `bucket_by_project`: some flag has `bucket_by: project` (its splits hash without the
 *   environment id; an evaluator that ignored it would put users in other buckets than the server).
 */
export const KNOWN_EVALUATION_FEATURES: readonly string[] = Object.freeze(['bucket_by_project', 'prerequisites']);

/** The features the flags use, sorted (empty when they use none). */
export function evaluationFeaturesOf(flags: Iterable<Flag>): string[] {
  let prerequisites = false;
  let bucketByProject = false;
  for (const flag of flags) {
    if (!prerequisites && Array.isArray(flag.prerequisites) && flag.prerequisites.length > 0) prerequisites = true;
    if (!bucketByProject && flag.bucket_by === 'project') bucketByProject = true;
    if (prerequisites && bucketByProject) break;
  }
  const features: string[] = [];
  if (bucketByProject) features.push('bucket_by_project');
  if (prerequisites) features.push('prerequisites');
  return features;
}

/** The names in `features` that this evaluator does not know (KNOWN_EVALUATION_FEATURES), in order. */
export function unknownEvaluationFeatures(features: Iterable<string>): string[] {
  const unknown: string[] = [];
  for (const feature of features) if (!KNOWN_EVALUATION_FEATURES.includes(feature) && !unknown.includes(feature)) unknown.push(feature);
  return unknown;
}

/**
 * The keys of every flag `flag` depends on through its prerequisites, transitively, in the order
 * met (a flag named but missing from `flags` included; cycles end). The flag itself is not listed
 * unless a cycle leads back to it.
 */
export function prerequisiteKeysOf(flag: Flag, flags: ReadonlyMap<string, Flag>): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  const pending: Flag[] = [flag];
  while (pending.length > 0) {
    const next = pending.pop()!;
    if (!Array.isArray(next.prerequisites)) continue;
    for (const prerequisite of next.prerequisites) {
      const key = prerequisite?.flag_key;
      if (typeof key !== 'string' || seen.has(key)) continue;
      seen.add(key);
      out.push(key);
      const found = flags.get(key);
      if (found !== undefined) pending.push(found);
    }
  }
  return out;
}
