import { randomBytes } from 'node:crypto';
import {
  failedPrecondition,
  notFound,
  type ChangeNotifier,
  type ContextSigningSecret,
  type EnvironmentScope,
  type Principal,
  type Repositories,
} from '@switchyard/core';
import { requireAllowed, requireAllowedSomewhere } from '../authorization.ts';
import { recordChange } from '../audit/audit-trail.ts';
import type { SecretBox } from '../sso/secret-box.ts';

/** Secrets an environment may hold at once: enough to rotate with overlap, few enough to try each. */
export const MAX_CONTEXT_SIGNING_SECRETS = 10;
/** The channel on which every instance hears that an environment's signing secrets changed (payload: its id). */
export const CONTEXT_SECRETS_CHANGED_CHANNEL = 'switchyard_context_secrets_changed';

/** The record of a secret: never its value, except once in the create answer. */
export interface ContextSigningSecretRecord {
  kid: string;
  environment_id: string;
  created_at_ms: number;
}

export interface CreatedContextSigningSecret extends ContextSigningSecretRecord {
  /** The HMAC key: the UTF-8 bytes of this text (256 random bits). Shown once. */
  secret: string;
}

/** A secret as verification uses it (the plaintext): only ever in memory. */
export interface OpenedSigningSecret {
  kid: string;
  secret: string;
}

export const contextSigningSecretRecord = (secret: ContextSigningSecret): ContextSigningSecretRecord => ({
  kid: secret.kid,
  environment_id: secret.environmentId,
  created_at_ms: secret.createdAtMs,
});

/** What a secret is sealed to: a sealed value copied onto another kid's row does not open. */
const sealedFor = (kid: string): string => `context-signing:${kid}`;

/**
 * Context signing secrets per environment (docs/client-side.md "4. Signed contexts"): org_admins
 * create (the secret shown once), list (never the secret) and delete them; each change is audited
 * without the secret and announced on CONTEXT_SECRETS_CHANGED_CHANNEL, so every instance (and,
 * through the credential watch, every gateway) forgets its copy of the environment's secrets.
 *
 * HS256 verification needs the plaintext, so secrets are sealed at rest by the SecretBox of
 * SSO_SECRETS_KEY (AES-256-GCM, bound to the kid), like identity providers' client secrets.
 */
export class ContextSigningService {
  constructor(
    private readonly repos: Pick<Repositories, 'contextSigningSecrets' | 'environments' | 'unitOfWork' | 'audit'>,
    /** null: no SSO_SECRETS_KEY in production, so no secret can be stored (FAILED_PRECONDITION). */
    private readonly box: SecretBox | null,
    private readonly notifier: ChangeNotifier,
    private readonly now: () => number = Date.now,
  ) {}

  async createSecret(principal: Principal, environmentId: string): Promise<CreatedContextSigningSecret> {
    requireAllowedSomewhere(principal, 'sdk_key.create', principal.orgId);
    const scope = await this.environmentScope(principal, environmentId);
    requireAllowed(principal, 'sdk_key.create', scope);
    const box = this.requireBox();
    const kid = `${scope.environmentId}.${randomBytes(9).toString('base64url')}`;
    const secret = `cs_${randomBytes(32).toString('base64url')}`;
    const created = await this.repos.unitOfWork.run(async (tx) => {
      const row = await tx.contextSigningSecrets.create(scope, { kid, sealedSecret: box.seal(secret, sealedFor(kid)) }, MAX_CONTEXT_SIGNING_SECRETS);
      await this.record(tx, principal, scope, 'context_signing_secret.create', kid, { after: contextSigningSecretRecord(row) });
      return row;
    });
    await this.notifier.publish(CONTEXT_SECRETS_CHANGED_CHANNEL, scope.environmentId);
    return { ...contextSigningSecretRecord(created), secret };
  }

  async listSecrets(principal: Principal, environmentId: string): Promise<ContextSigningSecretRecord[]> {
    requireAllowedSomewhere(principal, 'sdk_key.create', principal.orgId);
    const scope = await this.environmentScope(principal, environmentId);
    requireAllowed(principal, 'sdk_key.create', scope);
    return (await this.repos.contextSigningSecrets.list(scope)).map(contextSigningSecretRecord);
  }

  async deleteSecret(principal: Principal, environmentId: string, kid: string): Promise<void> {
    requireAllowedSomewhere(principal, 'sdk_key.delete', principal.orgId);
    const scope = await this.environmentScope(principal, environmentId);
    requireAllowed(principal, 'sdk_key.delete', scope);
    await this.repos.unitOfWork.run(async (tx) => {
      const deleted = await tx.contextSigningSecrets.delete(scope, kid);
      await this.record(tx, principal, scope, 'context_signing_secret.delete', kid, { before: contextSigningSecretRecord(deleted) });
    });
    await this.notifier.publish(CONTEXT_SECRETS_CHANGED_CHANNEL, scope.environmentId);
  }

  /**
   * The opened secrets of the caller's environment, for a gateway verifying its client keys'
   * context tokens in memory (docs/client-side.md "4. Signed contexts"). Only a client key of the
   * environment may ask; the answer travels over the internal hop only.
   */
  async environmentSecrets(principal: Principal, environmentId: string): Promise<OpenedSigningSecret[]> {
    requireAllowed(principal, 'flag.client_evaluate', { orgId: principal.orgId, environmentId });
    if (principal.kind !== 'client_key') throw notFound('environment', environmentId);
    return this.openedSecrets({ orgId: principal.orgId, projectId: principal.projectId, environmentId: principal.environmentId });
  }

  /** The environment's secrets, opened (services-local verification reads them through ContextSigningKeys). */
  async openedSecrets(scope: EnvironmentScope): Promise<OpenedSigningSecret[]> {
    const rows = await this.repos.contextSigningSecrets.list(scope);
    if (rows.length === 0) return [];
    const box = this.requireBox();
    return rows.map((row) => ({ kid: row.kid, secret: box.open(row.sealedSecret, sealedFor(row.kid)) }));
  }

  private requireBox(): SecretBox {
    if (this.box === null) throw failedPrecondition('context signing secrets need SSO_SECRETS_KEY (they are stored encrypted with it)');
    return this.box;
  }

  private async environmentScope(principal: Principal, environmentId: string): Promise<EnvironmentScope> {
    const environment = await this.repos.environments.get({ orgId: principal.orgId }, environmentId);
    if (!environment) throw notFound('environment', environmentId);
    return { orgId: environment.orgId, projectId: environment.projectId, environmentId: environment.id };
  }

  private async record(tx: Repositories, principal: Principal, scope: EnvironmentScope, action: string, kid: string, change: { before?: unknown; after?: unknown }): Promise<void> {
    await recordChange(
      tx,
      principal,
      { orgId: scope.orgId, action, resourceType: 'context_signing_secret', resourceId: kid, projectId: scope.projectId, environmentId: scope.environmentId, ...change },
      this.now(),
    );
  }
}
