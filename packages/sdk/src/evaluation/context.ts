import type { EvaluationContext, FlagValue } from '@switchyard/core';
import type { SdkContextInput } from '../types.ts';

const DEFAULT_CONTEXT_TYPE = 'user';

/**
 * SDK contexts `{key, type?, attributes?}` (or a non-empty array of them) → core's
 * EvaluationContext list; undefined for anything malformed (reported as INVALID_CONTEXT).
 */
export function toCoreContexts(input: SdkContextInput): EvaluationContext[] | undefined {
  const list: unknown[] = Array.isArray(input) ? input : [input];
  if (list.length === 0) return undefined;
  const out: EvaluationContext[] = [];
  for (const item of list) {
    if (typeof item !== 'object' || item === null) return undefined;
    const { key, type, attributes } = item as { key?: unknown; type?: unknown; attributes?: unknown };
    if (typeof key !== 'string' || key === '') return undefined;
    if (type !== undefined && (typeof type !== 'string' || type === '')) return undefined;
    const context: EvaluationContext = { context_type: (type as string | undefined) ?? DEFAULT_CONTEXT_TYPE, key };
    if (attributes !== undefined && attributes !== null) {
      if (typeof attributes !== 'object' || Array.isArray(attributes)) return undefined;
      const parameters: Record<string, string | number | boolean> = {};
      for (const [name, value] of Object.entries(attributes)) {
        if (typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value))) parameters[name] = value;
        else if (value !== undefined && value !== null) return undefined;
      }
      context.parameters = parameters;
    }
    out.push(context);
  }
  return out;
}

/** What a typed helper (or a fallback's own type) asks a value to be. */
export type ExpectedType = 'boolean' | 'string' | 'number' | 'object' | 'any';

/** The type a fallback implies: its JS type; null/undefined imply nothing. */
export function expectedTypeOf(fallback: unknown): ExpectedType {
  if (typeof fallback === 'boolean') return 'boolean';
  if (typeof fallback === 'string') return 'string';
  if (typeof fallback === 'number') return 'number';
  if (typeof fallback === 'object' && fallback !== null) return 'object';
  return 'any';
}

export function hasType(value: FlagValue, expected: ExpectedType): boolean {
  switch (expected) {
    case 'any':
      return true;
    case 'object':
      return typeof value === 'object' && value !== null;
    default:
      return typeof value === expected;
  }
}
