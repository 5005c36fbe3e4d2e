import { invalidArgument } from '@switchyard/core';

/** A project's settings as `PATCH /v1/management/projects/{project_id}` writes them. */
export interface ProjectSettings {
  clientVisibleDefault: boolean;
}

/**
 * The body of `PATCH /v1/management/projects/{project_id}`: `{client_visible_default: boolean}`
 * (docs/client-side.md "What a client sees"). Unknown fields are refused, so a misspelt setting
 * is an error rather than a silent no-op.
 */
export function parseProjectSettings(body: unknown): ProjectSettings {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw invalidArgument('the body must be an object {client_visible_default}', 'body');
  }
  const fields = body as Record<string, unknown>;
  const unknown = Object.keys(fields).filter((name) => name !== 'client_visible_default');
  if (unknown.length > 0) throw invalidArgument(`unknown project settings: ${unknown.join(', ')}`, unknown[0]!);
  if (typeof fields.client_visible_default !== 'boolean') {
    throw invalidArgument('client_visible_default must be true or false', 'client_visible_default');
  }
  return { clientVisibleDefault: fields.client_visible_default };
}
