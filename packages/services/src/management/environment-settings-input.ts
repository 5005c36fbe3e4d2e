import { invalidArgument } from '@switchyard/core';

/** What `PATCH /v1/management/environments/{environment_id}` changes; absent fields stay. */
export interface EnvironmentProtectionChange {
  critical?: boolean;
  requireComment?: boolean;
}

const FIELDS = ['critical', 'require_comment'];

/**
 * The body `{critical?: boolean, require_comment?: boolean}` (docs/access.md "Critical
 * environments"). Unknown fields are refused, so a misspelt setting is an error rather than a
 * silent no-op; an empty object changes nothing and answers the record.
 */
export function parseEnvironmentSettings(body: unknown): EnvironmentProtectionChange {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw invalidArgument('the body must be an object {critical?, require_comment?}', 'body');
  }
  const fields = body as Record<string, unknown>;
  const unknown = Object.keys(fields).filter((name) => !FIELDS.includes(name));
  if (unknown.length > 0) throw invalidArgument(`unknown environment settings: ${unknown.slice(0, 10).join(', ')}`, unknown[0]!);
  const change: EnvironmentProtectionChange = {};
  for (const [name, key] of [['critical', 'critical'], ['require_comment', 'requireComment']] as const) {
    const value = fields[name];
    if (value === undefined) continue;
    if (typeof value !== 'boolean') throw invalidArgument(`${name} must be true or false`, name);
    change[key] = value;
  }
  return change;
}
