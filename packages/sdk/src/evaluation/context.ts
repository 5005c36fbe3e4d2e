import type { EvaluationContext, FlagValue } from '@switchyard/core';
import type { SdkContextInput } from '../types.ts';

const DEFAULT_CONTEXT_TYPE = 'user';

/**
 * SDK contexts `{key, type?, attributes?}` (or a non-empty array of them) → core's
 * EvaluationContext list; undefined for anything malformed (reported as INVALID_CONTEXT).
 */
export function toCoreContexts(input: SdkContextInput): EvaluationContext[] | undefined {
  if (!Array.isArray(input)) {
    const context = toCoreContext(input);
    return context ? [context] : undefined;
  }
  if (input.length === 0) return undefined;
  const out: EvaluationContext[] = [];
  for (const item of input) {
    const context = toCoreContext(item);
    if (!context) return undefined;
    out.push(context);
  }
  return out;
}

/**
 * One context. The caller's attributes object is used as it is when every own value is a string,
 * a finite number or a boolean (the common case: no copy per evaluation; evaluation only reads
 * it); otherwise a copy of its own properties without null or undefined.
 */
function toCoreContext(item: unknown): EvaluationContext | undefined {
  if (typeof item !== 'object' || item === null) return undefined;
  const { key, type, attributes } = item as { key?: unknown; type?: unknown; attributes?: unknown };
  if (typeof key !== 'string' || key === '') return undefined;
  if (type !== undefined && (typeof type !== 'string' || type === '')) return undefined;
  const contextType = (type as string | undefined) ?? DEFAULT_CONTEXT_TYPE;
  // Every context is built with all three fields, so that all have one shape (a field added later
  // moves an object to another shape and a separate property store).
  if (attributes === undefined || attributes === null) return { context_type: contextType, key, parameters: undefined };
  if (typeof attributes !== 'object' || Array.isArray(attributes)) return undefined;
  const values = attributes as Record<string, unknown>;
  // Only own properties are attributes. Core reads nothing else (contextValue), so an object with
  // another prototype (a class instance, Object.create(...)) is used as it is too; its inherited
  // properties are neither checked here nor read there.
  let needsCopy = false;
  for (const name in values) {
    if (!Object.prototype.hasOwnProperty.call(values, name)) continue;
    const value = values[name];
    if (typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value))) continue;
    if (value === undefined || value === null) needsCopy = true;
    else return undefined;
  }
  return { context_type: contextType, key, parameters: needsCopy ? withoutAbsent(values) : (values as Record<string, string | number | boolean>) };
}

function withoutAbsent(values: Record<string, unknown>): Record<string, string | number | boolean> {
  const parameters: Record<string, string | number | boolean> = {};
  for (const [name, value] of Object.entries(values)) if (value !== undefined && value !== null) parameters[name] = value as string | number | boolean;
  return parameters;
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
