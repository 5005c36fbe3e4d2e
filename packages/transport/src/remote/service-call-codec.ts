import { invalidArgument } from '@switchyard/core';

/**
 * The JSON of svc.common.v1.ServiceCall.arguments and ServiceReply.result. Arguments go as
 * `{count, values}` keyed by position because a JSON array turns `undefined` into `null`, and the
 * services tell the two apart (an omitted `version` is not a `null` one).
 */
export function encodeArguments(args: readonly unknown[]): Buffer {
  const values: Record<string, unknown> = {};
  args.forEach((value, index) => {
    if (value !== undefined) values[index] = value;
  });
  return Buffer.from(JSON.stringify({ count: args.length, values }));
}

/** At most this many arguments: no service method takes more, and `count` sizes an array. */
const MAX_ARGUMENTS = 8;

export function decodeArguments(bytes: Uint8Array): unknown[] {
  let parsed: unknown;
  try {
    parsed = bytes.length === 0 ? { count: 0, values: {} } : JSON.parse(Buffer.from(bytes).toString('utf8'));
  } catch {
    throw invalidArgument('arguments must be JSON', 'arguments');
  }
  const { count, values } = (parsed ?? {}) as { count?: unknown; values?: unknown };
  if (!Number.isSafeInteger(count) || (count as number) < 0 || (count as number) > MAX_ARGUMENTS || typeof values !== 'object' || values === null) {
    throw invalidArgument('arguments must be {count, values}', 'arguments');
  }
  return Array.from({ length: count as number }, (_, index) => (Object.hasOwn(values, index) ? (values as Record<string, unknown>)[index] : undefined));
}

export const encodeResult = (result: unknown): Buffer => (result === undefined ? Buffer.alloc(0) : Buffer.from(JSON.stringify(result)));

export const decodeResult = (bytes: Uint8Array): unknown => (bytes.length === 0 ? undefined : JSON.parse(Buffer.from(bytes).toString('utf8')));
