import { isUnconditionalRule, type EvaluationContext, type Flag, type ParameterValue } from '@switchyard/core';

/** An OFREP request body (open-feature/protocol service/openapi.yaml). */
export interface OfrepBody {
  context?: Record<string, unknown>;
}

/** Evaluation of flags that never read the context (see needsTargetingKey) still needs a key. */
export const NO_TARGETING_KEY = 'ofrep:no-targeting-key';

/**
 * Whether the flag's answer can depend on the context key. A disabled flag serves its off
 * variant, an enabled flag without rules its default, and a rule with no conditions, no segments
 * and one variant (a default rule) serves everyone alike, whatever the context; any other rule may
 * compare, hash or look up the key. An enabled flag's prerequisites are evaluated for the same
 * context: it needs the key when one of them does (looked up in `flags`, the environment's; a
 * prerequisite missing there fails whatever the context). Without `flags`, any prerequisite counts.
 */
export function needsTargetingKey(flag: Flag | undefined, flags?: ReadonlyMap<string, Flag>, depth = 0): boolean {
  if (flag === undefined) return true;
  if (!flag.enabled) return false;
  if (flag.rules.some((rule) => !isUnconditionalRule(rule) || rule.allocation !== undefined)) return true;
  const prerequisites = flag.prerequisites;
  if (prerequisites === undefined || prerequisites.length === 0) return false;
  // Past core's depth bound the chain fails anyway; a cycle lands here too.
  if (flags === undefined || depth >= 16) return true;
  return prerequisites.some((p) => {
    const prerequisite = flags.get(p.flag_key);
    return prerequisite !== undefined && needsTargetingKey(prerequisite, flags, depth + 1);
  });
}

export interface MappedContext {
  targetingKey: string | undefined;
  context: EvaluationContext;
}

/** OFREP context → ours: targetingKey → key, kind/context_type → type, scalar attributes → parameters. */
export function mapContext(body: OfrepBody | undefined): MappedContext {
  const { targetingKey, kind, context_type: contextType, ...attributes } = body?.context ?? {};
  const parameters: Record<string, ParameterValue> = {};
  for (const [name, value] of Object.entries(attributes)) {
    // Our rules compare scalars only. Structured values are ignored rather than refused: the
    // OpenFeature SDK merges global, client and invocation contexts, and one attribute meant for
    // another system must not fail every evaluation (a rule on it simply does not match).
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') parameters[name] = value;
  }
  const key = typeof targetingKey === 'string' && targetingKey !== '' ? targetingKey : undefined;
  const type = typeof contextType === 'string' ? contextType : typeof kind === 'string' ? kind : 'user';
  return { targetingKey: key, context: { key: key ?? NO_TARGETING_KEY, context_type: type, parameters } };
}
