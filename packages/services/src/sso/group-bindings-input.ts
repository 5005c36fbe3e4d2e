import { BINDING_ROLES, invalidArgument, type BindingRole, type GroupBinding, type Repositories, type RoleBinding } from '@switchyard/core';
import { bindingLookups, dedupeBindings } from '../role-bindings/binding-lookups.ts';
import { roleBindingRecord, type RoleBindingRecord } from '../role-bindings/role-binding-records.ts';

/** A group mapping entry as written (REST body or gRPC message; "" and null mean absent). */
export interface GroupBindingBody {
  group?: string | null | undefined;
  bindings?: Array<{ role?: string | null; project_id?: string | null; environment_id?: string | null }> | null | undefined;
}

/** Groups one provider maps: an IdP's groups that matter to one org fit well within this. */
export const MAX_GROUP_ENTRIES = 100;
/** Bindings one group gives (as many as a member's own list, docs/access.md). */
export const MAX_BINDINGS_PER_GROUP = 100;
/** A group name (also the longest group value read from a sign-in). */
export const MAX_GROUP_NAME_LENGTH = 256;
/** The entry that applies to anyone matching no other. */
export const ANY_GROUP = '*';
/** Claim and attribute names: a URI at most (SAML attribute names often are). */
const MAX_CLAIM_NAME_LENGTH = 256;
export const DEFAULT_GROUPS_CLAIM = 'groups';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/;

/**
 * The claim or attribute name a provider reads groups from: absent keeps `current` (an update
 * that does not mention it), else "groups".
 */
export function checkClaimName(value: string | null | undefined, field: string, current: string | undefined): string {
  const name = (value ?? '').trim();
  if (name === '') return current ?? DEFAULT_GROUPS_CLAIM;
  if (name.length > MAX_CLAIM_NAME_LENGTH || CONTROL_CHARACTERS.test(name)) {
    throw invalidArgument(`${field} must be 1..${MAX_CLAIM_NAME_LENGTH} characters without control characters`, field);
  }
  return name;
}

/**
 * The mapping's shape, without I/O: at most 100 groups of at most 100 bindings, each group named
 * once (1..256 characters), roles among viewer/editor/admin, ids UUIDs. Whether the ids are the
 * org's is checked by resolveGroupBindings. Null: absent (an update keeps the stored mapping).
 */
export function checkGroupBindings(value: GroupBindingBody[] | null | undefined): GroupBinding[] | null {
  if (value === undefined || value === null) return null;
  if (!Array.isArray(value)) throw invalidArgument('group_bindings must be a list', 'group_bindings');
  if (value.length > MAX_GROUP_ENTRIES) throw invalidArgument(`group_bindings holds at most ${MAX_GROUP_ENTRIES} groups`, 'group_bindings');
  const seen = new Set<string>();
  return value.map((entry, i) => {
    const field = `group_bindings[${i}]`;
    if (entry === null || typeof entry !== 'object') throw invalidArgument(`${field} must be an object`, field);
    const group = typeof entry.group === 'string' ? entry.group : '';
    if (group.length === 0 || group.length > MAX_GROUP_NAME_LENGTH) {
      throw invalidArgument(`${field}.group must be 1..${MAX_GROUP_NAME_LENGTH} characters`, `${field}.group`);
    }
    if (seen.has(group)) throw invalidArgument(`${field}.group names a group already mapped: ${JSON.stringify(group.slice(0, 100))}`, `${field}.group`);
    seen.add(group);
    const bindings = entry.bindings ?? [];
    if (!Array.isArray(bindings)) throw invalidArgument(`${field}.bindings must be a list`, `${field}.bindings`);
    if (bindings.length > MAX_BINDINGS_PER_GROUP) {
      throw invalidArgument(`${field}.bindings holds at most ${MAX_BINDINGS_PER_GROUP} bindings`, `${field}.bindings`);
    }
    return { group, bindings: bindings.map((binding, j) => checkBindingShape(binding, `${field}.bindings[${j}]`)) };
  });
}

function checkBindingShape(binding: NonNullable<GroupBindingBody['bindings']>[number], field: string): RoleBinding {
  if (binding === null || typeof binding !== 'object') throw invalidArgument(`${field} must be an object`, field);
  const role = binding.role ?? '';
  if (!(BINDING_ROLES as readonly string[]).includes(role)) throw invalidArgument(`${field}.role must be viewer, editor or admin`, `${field}.role`);
  const result: RoleBinding = { role: role as BindingRole };
  for (const [key, name] of [['projectId', 'project_id'], ['environmentId', 'environment_id']] as const) {
    const id = binding[name];
    if (id === undefined || id === null || id === '') continue;
    if (typeof id !== 'string' || !UUID.test(id)) throw invalidArgument(`${field}.${name} must be a UUID`, `${field}.${name}`);
    result[key] = id.toLowerCase();
  }
  return result;
}

/**
 * Checks every id against the org (a project or environment of another org, or none, is a 400
 * naming the binding) and fills an environment binding's project_id from its environment; a given
 * project_id must be the environment's. One read per distinct id (at most 10,000 by the limits).
 */
export async function resolveGroupBindings(
  repos: Pick<Repositories, 'projects' | 'environments'>,
  orgId: string,
  mapping: GroupBinding[],
): Promise<GroupBinding[]> {
  const lookups = bindingLookups(repos, orgId);
  const projectExists = async (id: string) => (await lookups.project(id)) !== null;
  const projectOfEnvironment = async (id: string) => (await lookups.environment(id))?.projectId ?? null;
  const resolved: GroupBinding[] = [];
  for (const [i, entry] of mapping.entries()) {
    const bindings: RoleBinding[] = [];
    for (const [j, binding] of entry.bindings.entries()) {
      const field = `group_bindings[${i}].bindings[${j}]`;
      if (binding.environmentId !== undefined) {
        const projectId = await projectOfEnvironment(binding.environmentId);
        if (projectId === null) throw invalidArgument(`${field}.environment_id is not an environment of this organisation`, `${field}.environment_id`);
        if (binding.projectId !== undefined && binding.projectId !== projectId) {
          throw invalidArgument(`${field}.environment_id is not an environment of project_id ${binding.projectId}`, `${field}.environment_id`);
        }
        bindings.push({ role: binding.role, projectId, environmentId: binding.environmentId });
      } else if (binding.projectId !== undefined) {
        if (!(await projectExists(binding.projectId))) throw invalidArgument(`${field}.project_id is not a project of this organisation`, `${field}.project_id`);
        bindings.push({ role: binding.role, projectId: binding.projectId });
      } else {
        bindings.push({ role: binding.role });
      }
    }
    resolved.push({ group: entry.group, bindings: dedupeBindings(bindings) });
  }
  return resolved;
}

/** The mapping on the wire: `{group, bindings: [{role, project_id?, environment_id?}]}`. */
export const groupBindingRecords = (mapping: readonly GroupBinding[]): Array<{ group: string; bindings: RoleBindingRecord[] }> =>
  mapping.map((entry) => ({ group: entry.group, bindings: entry.bindings.map(roleBindingRecord) }));
