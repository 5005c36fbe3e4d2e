import { authorize, type Action, type AuditEntry, type Principal, type Repositories } from '@switchyard/core';

/**
 * What of the change history a reader may see (docs/security.md "Change history: what each reader
 * sees"). The log is readable by every member of the org, but it must not show them what they may
 * not read directly: an entry is shown to whoever may read its resource, as core's RBAC decides.
 */

/**
 * Resource types a member may not read directly, with the action that reads them: an identity
 * provider's settings (`GET .../auth-providers` needs auth_provider.manage) and invitations, with
 * the invited emails (`GET .../invitations` needs user.manage), and the org's domains with their
 * DNS challenges (`GET .../domains` needs auth_provider.manage). Every other type recorded is read
 * with org.read or an environment read that every member has.
 */
const READ_ACTION_OF: ReadonlyArray<readonly [resourceType: string, action: Action]> = [
  ['auth_provider', 'auth_provider.manage'],
  ['invitation', 'user.manage'],
  // An org's domains and their TXT challenge values (`GET .../domains` needs auth_provider.manage).
  ['org_domain', 'auth_provider.manage'],
  // An org's webhook endpoints: their addresses may carry a token (Slack's do); GET .../webhooks needs webhook.manage.
  ['webhook', 'webhook.manage'],
];

/** The resource types whose entries this caller may not see in the org's log (left out in the query). */
export function hiddenResourceTypes(principal: Principal, orgId: string): string[] {
  return READ_ACTION_OF.filter(([, action]) => !authorize(principal, action, { orgId }).allowed).map(([resourceType]) => resourceType);
}

/**
 * Strips from a page what its entries may show of resources the caller may not read:
 * - a single sign-on entry of a user (`details.provider_id`, `details.subject`) names the identity
 *   provider and the account's subject there: the details are left out unless the caller may read
 *   providers;
 * - a platform (system-org) administrator who acted in the org — created it, seeded its users,
 *   invited — is named by id only, unless the caller may administer the org's members
 *   (user.manage: who deals with invitations, where the inviter shows) or the administrator is a
 *   member of the org (then the member list shows the email anyway).
 */
export async function redactForReader(
  repos: Pick<Repositories, 'orgs' | 'users'>,
  principal: Principal,
  orgId: string,
  entries: AuditEntry[],
): Promise<AuditEntry[]> {
  const mayReadProviders = authorize(principal, 'auth_provider.manage', { orgId }).allowed;
  const hiddenEmails = authorize(principal, 'user.manage', { orgId }).allowed ? new Set<string>() : await platformAdminsOutside(repos, orgId, entries);
  return entries.map((entry) => {
    let shown = entry;
    if (!mayReadProviders && 'provider_id' in entry.details) shown = { ...shown, details: {} };
    if (entry.actor.email !== undefined && hiddenEmails.has(entry.actor.id)) shown = { ...shown, actor: { type: entry.actor.type, id: entry.actor.id } };
    return shown;
  });
}

/**
 * The user actors of `entries` that belong to the system org but not to `orgId`. One read of the
 * system org's members (a handful of platform administrators) per page, and one membership check
 * per administrator found in the page, whatever the page size.
 */
async function platformAdminsOutside(repos: Pick<Repositories, 'orgs' | 'users'>, orgId: string, entries: AuditEntry[]): Promise<Set<string>> {
  const actors = new Set(entries.filter((entry) => entry.actor.type === 'user' && entry.actor.email !== undefined).map((entry) => entry.actor.id));
  if (actors.size === 0) return new Set();
  const systemOrg = await repos.orgs.findSystemOrg();
  if (systemOrg === null || systemOrg.id === orgId) return new Set();
  const hidden = new Set<string>();
  for (const { user } of await repos.users.listOrgUsers({ orgId: systemOrg.id })) {
    if (actors.has(user.id) && (await repos.users.getMembership(orgId, user.id)) === null) hidden.add(user.id);
  }
  return hidden;
}
