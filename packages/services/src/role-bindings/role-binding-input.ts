import { BINDING_ROLES, invalidArgument, type BindingRole, type Repositories, type RoleBinding } from '@switchyard/core';
import { bindingLookups, dedupeBindings } from './binding-lookups.ts';

/** At most this many bindings per member: one per environment of a large org, with room. */
export const MAX_ROLE_BINDINGS = 100;

const MAX_ID_LENGTH = 100;
const FIELDS = new Set(['role', 'project_id', 'environment_id']);

/** A binding as sent, its shape checked (ids not yet looked up). */
interface SentBinding {
  role: BindingRole;
  projectId?: string;
  environmentId?: string;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

function optionalId(entry: Record<string, unknown>, field: 'project_id' | 'environment_id', at: string): string | undefined {
  const value = entry[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || value === '' || value.length > MAX_ID_LENGTH) throw invalidArgument(`${at}.${field} must be an id`, `${at}.${field}`);
  return value;
}

/**
 * The shape of a PUT body `{bindings: [{role, project_id?, environment_id?}]}` (at most
 * MAX_ROLE_BINDINGS entries, no other fields). Whatever the transport: REST sends JSON, gRPC maps
 * its messages to the same object. @throws INVALID_ARGUMENT naming the entry (`bindings[2].role`).
 */
export function parseRoleBindingsBody(body: unknown): SentBinding[] {
  if (!isObject(body)) throw invalidArgument('the body must be an object {bindings: [...]}', 'bindings');
  for (const field of Object.keys(body)) if (field !== 'bindings') throw invalidArgument(`unknown field ${field}`, field);
  const list = body.bindings;
  if (!Array.isArray(list)) throw invalidArgument('bindings must be an array', 'bindings');
  if (list.length > MAX_ROLE_BINDINGS) throw invalidArgument(`bindings must have at most ${MAX_ROLE_BINDINGS} entries`, 'bindings');
  return list.map((entry: unknown, index) => {
    const at = `bindings[${index}]`;
    if (!isObject(entry)) throw invalidArgument(`${at} must be an object {role, project_id?, environment_id?}`, at);
    for (const field of Object.keys(entry)) if (!FIELDS.has(field)) throw invalidArgument(`${at} has an unknown field ${field}`, `${at}.${field}`);
    const role = entry.role;
    if (typeof role !== 'string' || !(BINDING_ROLES as readonly string[]).includes(role)) {
      throw invalidArgument(`${at}.role must be one of ${BINDING_ROLES.join(', ')}`, `${at}.role`);
    }
    const projectId = optionalId(entry, 'project_id', at);
    const environmentId = optionalId(entry, 'environment_id', at);
    return { role: role as BindingRole, ...(projectId === undefined ? {} : { projectId }), ...(environmentId === undefined ? {} : { environmentId }) };
  });
}

/**
 * The bindings to store: every id looked up inside the org (an id of another org reads as unknown,
 * so nothing about it is revealed), an environment's project filled in when omitted and checked
 * when given, identical entries collapsed (the first kept, order otherwise as sent). At most
 * 2 × MAX_ROLE_BINDINGS lookups, each id once. @throws INVALID_ARGUMENT naming the entry.
 */
export async function resolveRoleBindings(
  repos: Pick<Repositories, 'projects' | 'environments'>,
  orgId: string,
  sent: readonly SentBinding[],
): Promise<RoleBinding[]> {
  const { project, environment } = bindingLookups(repos, orgId);
  const resolved: RoleBinding[] = [];
  for (const [index, binding] of sent.entries()) {
    const at = `bindings[${index}]`;
    let projectId = binding.projectId;
    if (projectId !== undefined && !(await project(projectId))) throw invalidArgument(`${at}.project_id: no such project in this organisation`, `${at}.project_id`);
    if (binding.environmentId !== undefined) {
      const found = await environment(binding.environmentId);
      if (!found) throw invalidArgument(`${at}.environment_id: no such environment in this organisation`, `${at}.environment_id`);
      if (projectId !== undefined && projectId !== found.projectId) {
        throw invalidArgument(`${at}.environment_id is not an environment of project ${projectId}`, `${at}.environment_id`);
      }
      projectId = found.projectId;
    }
    resolved.push({
      role: binding.role,
      ...(projectId === undefined ? {} : { projectId }),
      ...(binding.environmentId === undefined ? {} : { environmentId: binding.environmentId }),
    });
  }
  return dedupeBindings(resolved);
}
