import { isDomainError, type AuditActor, type Org, type PasswordHasher, type Repositories } from '@switchyard/core';
import { orgRecord, recordChange, userRecord } from '@switchyard/services';
import { firstRun, type FirstRunResult } from './first-run.ts';

export const SYSTEM_ORG_NAME = 'system';

/** Who the audit log names for what the platform does by itself at startup. */
const BOOTSTRAP_ACTOR: AuditActor = { type: 'system', id: 'bootstrap' };

export interface BootstrapResult {
  systemOrg: Org;
  /** The BOOTSTRAP_ADMIN_* administrator when this start created it. */
  createdAdmin: { email: string; generatedPassword: string | null } | null;
  /** What the development first run made or found (docs/first-run.md); null when it does not apply. */
  firstRun: FirstRunResult | null;
}

async function ensureSystemOrg(repos: Repositories): Promise<Org> {
  const existing = await repos.orgs.findSystemOrg();
  if (existing) return existing;
  try {
    return await repos.unitOfWork.run(async (tx) => {
      const org = await tx.orgs.create({ name: SYSTEM_ORG_NAME, isSystem: true });
      await recordChange(tx, BOOTSTRAP_ACTOR, { orgId: org.id, action: 'org.create', resourceType: 'org', resourceId: org.id, after: orgRecord(org) }, Date.now());
      return org;
    });
  } catch (error) {
    // Another instance starting at the same moment created it first.
    if (isDomainError(error) && error.code === 'ALREADY_EXISTS') {
      const created = await repos.orgs.findSystemOrg();
      if (created) return created;
    }
    throw error;
  }
}

async function ensureAdmin(repos: Repositories, hasher: PasswordHasher, org: Org, email: string, password: string): Promise<boolean> {
  if (await repos.users.getByEmail(email)) return false;
  try {
    const passwordHash = await hasher.hash(password);
    return await repos.unitOfWork.run(async (tx) => {
      // The operator configured this address for itself: it counts as proved (a reset never claims it away).
      const user = await tx.users.create({ email, displayName: 'Administrator', passwordHash, emailVerifiedAtMs: Date.now() });
      const membership = await tx.users.addMembership({ orgId: org.id, userId: user.id, role: 'org_admin' });
      await recordChange(tx, BOOTSTRAP_ACTOR, { orgId: org.id, action: 'user.create', resourceType: 'user', resourceId: user.id, after: userRecord(user, membership) }, Date.now());
      return true;
    });
  } catch (error) {
    if (isDomainError(error) && error.code === 'ALREADY_EXISTS') return false;
    throw error;
  }
}

/**
 * docs/contract.md "Processes and ports" (bootstrap): the system org always exists; the first
 * administrator comes from BOOTSTRAP_ADMIN_EMAIL/PASSWORD, or, in development on the embedded
 * database with neither set, the first run (first-run.ts, docs/first-run.md) makes a system
 * administrator, a ready org with its admin, a project, two environments and a key.
 */
export async function bootstrap(
  repos: Repositories,
  hasher: PasswordHasher,
  options: { admin: { email: string; password: string } | null; firstRun: { dataDir: string } | null },
): Promise<BootstrapResult> {
  const systemOrg = await ensureSystemOrg(repos);
  if (options.admin) {
    const created = await ensureAdmin(repos, hasher, systemOrg, options.admin.email, options.admin.password);
    return { systemOrg, createdAdmin: created ? { email: options.admin.email, generatedPassword: null } : null, firstRun: null };
  }
  if (options.firstRun) {
    return { systemOrg, createdAdmin: null, firstRun: await firstRun(repos, hasher, systemOrg, options.firstRun) };
  }
  return { systemOrg, createdAdmin: null, firstRun: null };
}
