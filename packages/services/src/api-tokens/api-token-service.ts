import { failedPrecondition, invalidArgument, type ApiToken, type ApiTokenScope, type ChangeNotifier, type Principal, type Repositories } from '@switchyard/core';
import { recordChange } from '../audit/audit-trail.ts';
import { requireAllowed, requireStillOrgAdmin } from '../authorization.ts';
import { SDK_KEY_REVOKED_CHANNEL } from '../auth/credential-verifier.ts';
import { generateApiToken } from '../auth/secrets.ts';
import { parseNewApiToken } from './api-token-input.ts';
import { apiTokenRecord, type ApiTokenRecord } from './api-token-records.ts';

/** Active (not revoked) tokens an org may hold: a list an admin can still read, and a bound on what leaks. */
export const MAX_ACTIVE_API_TOKENS = 100;

/**
 * API tokens (docs/access.md "API tokens"): credentials for automation, created, listed and revoked
 * by org admins ('api_token.manage', which a token never holds: no token mints or revokes tokens).
 * The plaintext is in the create answer only; the store keeps its SHA-256.
 */
export class ApiTokenService {
  constructor(
    private readonly repos: Pick<Repositories, 'apiTokens' | 'users' | 'projects' | 'environments' | 'unitOfWork'>,
    private readonly notifier: ChangeNotifier,
    /** This instance's verifier forgets a revoked token at once (others hear the notice). */
    private readonly onRevoked: (tokenId: string) => void = () => {},
    private readonly now: () => number = Date.now,
  ) {}

  /** @throws INVALID_ARGUMENT (shape, or scope ids not the org's), FAILED_PRECONDITION at MAX_ACTIVE_API_TOKENS. */
  async create(principal: Principal, orgId: string, body: unknown): Promise<ApiTokenRecord> {
    requireAllowed(principal, 'api_token.manage', { orgId });
    const input = parseNewApiToken(body, this.now());
    await this.checkScope(orgId, input.scope);
    const material = generateApiToken();
    const createdByUserId = principal.kind === 'user' && !principal.isSystem ? principal.userId : null;
    const token = await this.repos.unitOfWork.run(async (tx) => {
      await requireStillOrgAdmin(tx, principal, orgId);
      // Counted inside the write's transaction; parallel creates may each see 99 (bounded by their number).
      if ((await tx.apiTokens.list({ orgId })).length >= MAX_ACTIVE_API_TOKENS) {
        throw failedPrecondition(`an organisation holds at most ${MAX_ACTIVE_API_TOKENS} active API tokens; revoke one first`);
      }
      const created = await tx.apiTokens.create({ orgId }, { ...input, tokenPrefix: material.prefix, tokenHash: material.hash, createdByUserId });
      await recordChange(tx, principal, { orgId, action: 'api_token.create', resourceType: 'api_token', resourceId: created.id, after: apiTokenRecord(created, null) }, this.now());
      return created;
    });
    return apiTokenRecord(token, await this.creatorOf(token), material.plaintext);
  }

  /** The org's active tokens (expired ones included, marked by expires_at_ms), never their plaintext. */
  async list(principal: Principal, orgId: string): Promise<ApiTokenRecord[]> {
    requireAllowed(principal, 'api_token.manage', { orgId });
    const tokens = await this.repos.apiTokens.list({ orgId });
    const creators = new Map<string, { user_id: string; email: string } | null>();
    for (const token of tokens) {
      if (token.createdByUserId !== null && !creators.has(token.createdByUserId)) creators.set(token.createdByUserId, await this.creatorOf(token));
    }
    return tokens.map((token) => apiTokenRecord(token, token.createdByUserId === null ? null : (creators.get(token.createdByUserId) ?? null)));
  }

  /**
   * Revokes a token at once: forgotten here, and announced on the SDK-key channel so every instance
   * and every gateway (credential watch) forgets it too. @throws NOT_FOUND unknown, revoked, another org's.
   */
  async revoke(principal: Principal, orgId: string, tokenId: string): Promise<void> {
    requireAllowed(principal, 'api_token.manage', { orgId });
    const revoked = await this.repos.unitOfWork.run(async (tx) => {
      await requireStillOrgAdmin(tx, principal, orgId);
      const token = await tx.apiTokens.revoke({ orgId }, tokenId, this.now());
      await recordChange(tx, principal, { orgId, action: 'api_token.revoke', resourceType: 'api_token', resourceId: token.id, before: apiTokenRecord(token, null) }, this.now());
      return token;
    });
    this.onRevoked(revoked.id);
    await this.notifier.publish(SDK_KEY_REVOKED_CHANNEL, revoked.id);
  }

  /** Every id must be the org's, and listed environments in listed projects. @throws INVALID_ARGUMENT naming the field. */
  private async checkScope(orgId: string, scope: ApiTokenScope): Promise<void> {
    if (scope.projectIds !== undefined) {
      const projects = new Set((await this.repos.projects.list({ orgId })).map((project) => project.id));
      const unknown = scope.projectIds.find((id) => !projects.has(id));
      if (unknown !== undefined) throw invalidArgument(`scope.project_ids: no project ${unknown} in this organisation`, 'scope.project_ids');
    }
    for (const id of scope.environmentIds ?? []) {
      const environment = await this.repos.environments.get({ orgId }, id);
      if (!environment) throw invalidArgument(`scope.environment_ids: no environment ${id} in this organisation`, 'scope.environment_ids');
      if (scope.projectIds !== undefined && !scope.projectIds.includes(environment.projectId)) {
        throw invalidArgument(`scope.environment_ids: environment ${id} is not in a project of scope.project_ids`, 'scope.environment_ids');
      }
    }
  }

  private async creatorOf(token: ApiToken): Promise<{ user_id: string; email: string } | null> {
    if (token.createdByUserId === null) return null;
    const user = await this.repos.users.getById(token.createdByUserId);
    return user ? { user_id: user.id, email: user.email } : null;
  }
}
