import { BINDING_ROLES, invalidArgument, type ApiTokenScope, type BindingRole } from '@switchyard/core';
import { MAX_EXPIRY_AHEAD_MS } from '../client/client-key-input.ts';

/** The longest name a token may have, and how many ids each scope list may hold (docs/access.md "API tokens"). */
export const MAX_TOKEN_NAME_LENGTH = 100;
export const MAX_SCOPE_PROJECTS = 50;
export const MAX_SCOPE_ENVIRONMENTS = 200;

export interface NewApiTokenInput {
  name: string;
  role: BindingRole;
  scope: ApiTokenScope;
  expiresAtMs: number | null;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * `{name, role, scope?: {project_ids?, environment_ids?}, expires_at_ms?}`, checked here whatever the
 * transport (REST, gRPC, the gateway hop): shapes and bounds only; whether the ids are the org's is
 * the service's check. Unknown fields are refused so a misspelt `scope` never widens a token.
 * @throws INVALID_ARGUMENT naming the field.
 */
export function parseNewApiToken(body: unknown, nowMs: number): NewApiTokenInput {
  if (!isObject(body)) throw invalidArgument('the body must be an object', 'body');
  for (const field of Object.keys(body)) {
    if (!['name', 'role', 'scope', 'expires_at_ms'].includes(field)) throw invalidArgument(`unknown field ${field}`, field);
  }
  if (typeof body.name !== 'string' || body.name.trim() === '') throw invalidArgument('name is required', 'name');
  const name = body.name.trim();
  if (name.length > MAX_TOKEN_NAME_LENGTH) throw invalidArgument(`name must be at most ${MAX_TOKEN_NAME_LENGTH} characters`, 'name');
  if (typeof body.role !== 'string' || !(BINDING_ROLES as readonly string[]).includes(body.role)) {
    throw invalidArgument('role must be viewer, editor or admin', 'role');
  }
  return { name, role: body.role as BindingRole, scope: parseScope(body.scope), expiresAtMs: parseExpiry(body.expires_at_ms, nowMs) };
}

function parseScope(value: unknown): ApiTokenScope {
  if (value === undefined || value === null) return {};
  if (!isObject(value)) throw invalidArgument('scope must be an object', 'scope');
  for (const field of Object.keys(value)) {
    if (field !== 'project_ids' && field !== 'environment_ids') throw invalidArgument(`unknown field scope.${field}`, `scope.${field}`);
  }
  const scope: ApiTokenScope = {};
  const projectIds = idList(value.project_ids, 'scope.project_ids', MAX_SCOPE_PROJECTS);
  const environmentIds = idList(value.environment_ids, 'scope.environment_ids', MAX_SCOPE_ENVIRONMENTS);
  if (projectIds !== undefined) scope.projectIds = projectIds;
  if (environmentIds !== undefined) scope.environmentIds = environmentIds;
  return scope;
}

function idList(value: unknown, field: string, max: number): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) throw invalidArgument(`${field} must be a list of ids`, field);
  // An empty list would be a token that covers nothing: refused rather than created useless.
  if (value.length === 0) throw invalidArgument(`${field} must name at least one id (omit it for no limit)`, field);
  if (value.length > max) throw invalidArgument(`${field} may hold at most ${max} ids`, field);
  const ids: string[] = [];
  for (const id of value) {
    if (typeof id !== 'string' || id === '' || id.length > 100) throw invalidArgument(`${field} must hold id strings`, field);
    if (!ids.includes(id)) ids.push(id);
  }
  return ids;
}

function parseExpiry(value: unknown, nowMs: number): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw invalidArgument('expires_at_ms must be a whole number of milliseconds', 'expires_at_ms');
  if (value <= nowMs) throw invalidArgument('expires_at_ms must be in the future', 'expires_at_ms');
  // As for client keys; it also keeps the instant a Date the database can store.
  if (value > nowMs + MAX_EXPIRY_AHEAD_MS) throw invalidArgument('expires_at_ms is at most ten years ahead', 'expires_at_ms');
  return value;
}
