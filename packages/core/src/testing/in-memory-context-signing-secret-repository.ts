import { failedPrecondition, notFound } from '../errors/domain-error.ts';
import type { ContextSigningSecret, ContextSigningSecretRepository } from '../client/context-signing-ports.ts';
import type { EnvironmentScope } from '../ports/scopes.ts';
import type { InMemoryState } from './in-memory-state.ts';

const inScope = (secret: ContextSigningSecret, scope: EnvironmentScope): boolean =>
  secret.orgId === scope.orgId && secret.projectId === scope.projectId && secret.environmentId === scope.environmentId;

/** ContextSigningSecretRepository over the shared in-memory tables. */
export class InMemoryContextSigningSecretRepository implements ContextSigningSecretRepository {
  constructor(private readonly state: InMemoryState) {}

  async create(scope: EnvironmentScope, input: { kid: string; sealedSecret: string }, maxPerEnvironment: number): Promise<ContextSigningSecret> {
    this.state.requireEnvironment(scope);
    if ((await this.list(scope)).length >= maxPerEnvironment) {
      throw failedPrecondition(`an environment holds at most ${maxPerEnvironment} context signing secrets; delete one first`);
    }
    const secret: ContextSigningSecret = { ...scope, kid: input.kid, sealedSecret: input.sealedSecret, createdAtMs: this.state.now() };
    this.state.contextSigningSecrets.set(secret.kid, secret);
    return { ...secret };
  }

  async list(scope: EnvironmentScope): Promise<ContextSigningSecret[]> {
    return [...this.state.contextSigningSecrets.values()].filter((secret) => inScope(secret, scope)).map((secret) => ({ ...secret }));
  }

  async delete(scope: EnvironmentScope, kid: string): Promise<ContextSigningSecret> {
    const secret = this.state.contextSigningSecrets.get(kid);
    if (!secret || !inScope(secret, scope)) throw notFound('context signing secret', kid);
    this.state.contextSigningSecrets.delete(kid);
    return { ...secret };
  }
}
