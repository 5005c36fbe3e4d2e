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
 * compare, hash or look up the key.
 */
export const needsTargetingKey = (flag: Flag | undefined): boolean =>
  flag === undefined || (flag.enabled && flag.rules.some((rule) => !isUnconditionalRule(rule) || rule.allocation !== undefined));

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
