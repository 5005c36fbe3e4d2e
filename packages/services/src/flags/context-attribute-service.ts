import { MAX_CONTEXT_ATTRIBUTES_PER_ENVIRONMENT, type ContextAttribute, type EnvironmentScope, type Principal, type Repositories } from '@switchyard/core';
import { requireAllowed } from '../authorization.ts';
import type { ScopeResolver } from '../scopes.ts';

/**
 * The attribute names evaluated contexts used in an environment (docs/contract.md "Context
 * attributes"), for whoever may read its flags: the console's rule editor suggests them. Written
 * by KeyUsageService from keys' evaluations; names only, never values.
 */
export class ContextAttributeService {
  constructor(
    private readonly repos: Pick<Repositories, 'contextAttributes'>,
    private readonly scopes: ScopeResolver,
  ) {}

  async scope(principal: Principal, environmentId: string): Promise<EnvironmentScope> {
    return this.scopes.environment(principal, environmentId);
  }

  /** Most recently seen first. @throws PERMISSION_DENIED without flag.read (SDK and client keys). */
  async list(principal: Principal, scope: EnvironmentScope): Promise<ContextAttribute[]> {
    requireAllowed(principal, 'flag.read', { orgId: scope.orgId, projectId: scope.projectId, environmentId: scope.environmentId });
    return this.repos.contextAttributes.list(scope, MAX_CONTEXT_ATTRIBUTES_PER_ENVIRONMENT);
  }
}
