import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { isDomainError, type AuditActor, type Org, type PasswordHasher, type Repositories } from '@switchyard/core';
import { environmentRecord, generateSdkKey, orgRecord, projectRecord, recordChange, sdkKeyRecord, userRecord } from '@switchyard/services';

/** The first run's logins and what it names (docs/first-run.md). */
export const FIRST_RUN = {
  systemAdminEmail: 'system@localhost',
  adminEmail: 'admin@localhost',
  orgName: 'Default',
  projectName: 'My project',
  environmentNames: ['development', 'production'],
  /** The environment that gets the server SDK key. */
  keyEnvironment: 'development',
} as const;

/** Files in the data directory (mode 0600) that keep what the first run printed once. */
export const FIRST_RUN_FILES = {
  systemAdminPassword: 'system-admin-password',
  adminPassword: 'admin-password',
  developmentSdkKey: 'development-sdk-key',
} as const;

/** Who the audit log names for what the platform does by itself at startup. */
const BOOTSTRAP_ACTOR: AuditActor = { type: 'system', id: 'bootstrap' };

export interface FirstRunLogin {
  email: string;
  /** The generated password: only on the start that created the account (shown once). */
  password: string | null;
  /** Where the password is kept. */
  passwordFile: string;
}

/**
 * What the first-run step found or made:
 * - `created`: this start made the two logins, the org, the project, its environments and a key;
 * - `existing`: an earlier first run did (nothing is made again; the passwords are in their files);
 * - `legacy`: a data directory from before first run, whose `admin@localhost` is the system
 *   administrator: it is left as it was (that login keeps working, no org is made);
 * - `administered`: neither login exists but the system org has members (BOOTSTRAP_ADMIN_* was set
 *   on an earlier start, or the first run's accounts were renamed or removed): nothing is made, so
 *   a data directory never gains a second "Default" org and a system administrator nobody asked for.
 */
export type FirstRunResult =
  | {
      kind: 'created';
      systemAdmin: FirstRunLogin;
      admin: FirstRunLogin;
      org: { id: string; name: string };
      project: { id: string; name: string };
      /** In FIRST_RUN.environmentNames order. */
      environments: Array<{ id: string; name: string }>;
      sdkKey: { id: string; environmentId: string; environmentName: string; rawKey: string; file: string };
    }
  | { kind: 'existing'; systemAdmin: FirstRunLogin | null; admin: FirstRunLogin; sdkKeyFile: string | null }
  | { kind: 'legacy'; admin: FirstRunLogin }
  | { kind: 'administered' };

const generatePassword = (): string => randomBytes(12).toString('base64url');

/**
 * Writes a secret the way dev-secrets.ts does (mode 0600), through a temporary file so a crash never
 * leaves half a password behind.
 */
function writeSecretFile(file: string, secret: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const temporary = `${file}.new`;
  writeFileSync(temporary, `${secret}\n`, { mode: 0o600 });
  renameSync(temporary, file);
}

/**
 * The development first run (docs/first-run.md), on the system org made by bootstrap: a system
 * administrator `system@localhost`, an org "Default" whose org_admin is `admin@localhost` (its only
 * org, so signing in lands there), a project "My project" with `development` and `production`
 * environments and a server SDK key in `development`. Generated passwords and the key are written
 * to `dataDir` (mode 0600) and returned for the caller to print once.
 *
 * All of it is one unit of work and the files are written inside it, last: either everything
 * exists and the files hold its secrets, or nothing does and the next start tries again. A start
 * that finds either login already there makes nothing (idempotent; two starts racing: the second
 * one's insert of the same email fails and it reports `existing`).
 */
export async function firstRun(
  repos: Repositories,
  hasher: PasswordHasher,
  systemOrg: Org,
  options: { dataDir: string; now?: () => number },
): Promise<FirstRunResult> {
  const now = options.now ?? Date.now;
  const file = (name: string) => path.resolve(options.dataDir, name);
  const found = await findExisting(repos, systemOrg, file);
  if (found) return found;

  const systemPassword = generatePassword();
  const adminPassword = generatePassword();
  const [systemHash, adminHash] = await Promise.all([hasher.hash(systemPassword), hasher.hash(adminPassword)]);
  const key = generateSdkKey('server');
  try {
    return await repos.unitOfWork.run(async (tx) => {
      const at = now();
      const record = (change: Parameters<typeof recordChange>[2]) => recordChange(tx, BOOTSTRAP_ACTOR, change, at);
      // The addresses are the operator's own (like BOOTSTRAP_ADMIN_EMAIL): they count as proved.
      const systemUser = await tx.users.create({ email: FIRST_RUN.systemAdminEmail, displayName: 'System administrator', passwordHash: systemHash, emailVerifiedAtMs: at });
      const systemMembership = await tx.users.addMembership({ orgId: systemOrg.id, userId: systemUser.id, role: 'org_admin' });
      await record({ orgId: systemOrg.id, action: 'user.create', resourceType: 'user', resourceId: systemUser.id, after: userRecord(systemUser, systemMembership) });

      const org = await tx.orgs.create({ name: FIRST_RUN.orgName });
      await record({ orgId: org.id, action: 'org.create', resourceType: 'org', resourceId: org.id, after: orgRecord(org) });
      const admin = await tx.users.create({ email: FIRST_RUN.adminEmail, displayName: 'Administrator', passwordHash: adminHash, emailVerifiedAtMs: at });
      const adminMembership = await tx.users.addMembership({ orgId: org.id, userId: admin.id, role: 'org_admin' });
      await record({ orgId: org.id, action: 'user.create', resourceType: 'user', resourceId: admin.id, after: userRecord(admin, adminMembership) });

      const project = await tx.projects.create({ orgId: org.id }, { name: FIRST_RUN.projectName });
      await record({ orgId: org.id, action: 'project.create', resourceType: 'project', resourceId: project.id, projectId: project.id, after: projectRecord(project) });
      const environments: Array<{ id: string; name: string }> = [];
      for (const name of FIRST_RUN.environmentNames) {
        const environment = await tx.environments.create({ orgId: org.id, projectId: project.id }, { name });
        await record({
          orgId: org.id,
          action: 'environment.create',
          resourceType: 'environment',
          resourceId: environment.id,
          projectId: project.id,
          environmentId: environment.id,
          after: environmentRecord(environment),
        });
        environments.push({ id: environment.id, name: environment.name });
      }
      const keyEnvironment = environments.find((environment) => environment.name === FIRST_RUN.keyEnvironment)!;
      const scope = { orgId: org.id, projectId: project.id, environmentId: keyEnvironment.id };
      const sdkKey = await tx.sdkKeys.create(scope, { keyPrefix: key.keyPrefix, keyHash: key.keyHash, kind: 'server' });
      // Without raw_key, as ManagementService records it: the secret is never in the log.
      await record({ ...scope, action: 'sdk_key.create', resourceType: 'sdk_key', resourceId: sdkKey.id, after: sdkKeyRecord(sdkKey) });

      // Last, inside the unit of work: a file that cannot be written rolls all of it back.
      writeSecretFile(file(FIRST_RUN_FILES.systemAdminPassword), systemPassword);
      writeSecretFile(file(FIRST_RUN_FILES.adminPassword), adminPassword);
      writeSecretFile(file(FIRST_RUN_FILES.developmentSdkKey), key.rawKey);
      return {
        kind: 'created' as const,
        systemAdmin: { email: FIRST_RUN.systemAdminEmail, password: systemPassword, passwordFile: file(FIRST_RUN_FILES.systemAdminPassword) },
        admin: { email: FIRST_RUN.adminEmail, password: adminPassword, passwordFile: file(FIRST_RUN_FILES.adminPassword) },
        org: { id: org.id, name: org.name },
        project: { id: project.id, name: project.name },
        environments,
        sdkKey: { id: sdkKey.id, environmentId: keyEnvironment.id, environmentName: keyEnvironment.name, rawKey: key.rawKey, file: file(FIRST_RUN_FILES.developmentSdkKey) },
      };
    });
  } catch (error) {
    // Another instance on the same database made them first.
    if (isDomainError(error) && error.code === 'ALREADY_EXISTS') {
      const made = await findExisting(repos, systemOrg, file);
      if (made) return made;
    }
    throw error;
  }
}

async function findExisting(repos: Repositories, systemOrg: Org, file: (name: string) => string): Promise<FirstRunResult | null> {
  const [systemAdmin, admin] = await Promise.all([repos.users.getByEmail(FIRST_RUN.systemAdminEmail), repos.users.getByEmail(FIRST_RUN.adminEmail)]);
  if (!systemAdmin && !admin) {
    return (await repos.users.listOrgUsers({ orgId: systemOrg.id })).length > 0 ? { kind: 'administered' } : null;
  }
  const login = (email: string, name: string): FirstRunLogin => ({ email, password: null, passwordFile: file(name) });
  // Before first run existed, the development admin was admin@localhost in the system org.
  if (admin && !systemAdmin && (await repos.users.getMembership(systemOrg.id, admin.id))) {
    return { kind: 'legacy', admin: login(FIRST_RUN.adminEmail, FIRST_RUN_FILES.adminPassword) };
  }
  const keyFile = file(FIRST_RUN_FILES.developmentSdkKey);
  return {
    kind: 'existing',
    systemAdmin: systemAdmin ? login(FIRST_RUN.systemAdminEmail, FIRST_RUN_FILES.systemAdminPassword) : null,
    admin: login(FIRST_RUN.adminEmail, FIRST_RUN_FILES.adminPassword),
    sdkKeyFile: existsSync(keyFile) ? keyFile : null,
  };
}
