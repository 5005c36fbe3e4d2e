import type { EnvironmentScope } from '../ports/scopes.ts';

/** One context signing secret of an environment (docs/client-side.md "4. Signed contexts"). */
export interface ContextSigningSecret {
  /** `<environment_id>.<random>`: the JWT header `kid` of tokens signed with it; names its environment. */
  kid: string;
  orgId: string;
  projectId: string;
  environmentId: string;
  /** The secret sealed at rest (services' SecretBox): HS256 needs the plaintext, so it is not hashed. */
  sealedSecret: string;
  createdAtMs: number;
}

/** The secrets context tokens are signed with, per environment (several at a time: rotation). */
export interface ContextSigningSecretRepository {
  /**
   * Adds a secret unless the environment already holds `maxPerEnvironment`.
   * @throws NOT_FOUND when the environment is not in the scope; FAILED_PRECONDITION at the cap.
   */
  create(scope: EnvironmentScope, input: { kid: string; sealedSecret: string }, maxPerEnvironment: number): Promise<ContextSigningSecret>;
  /** The environment's secrets, oldest first. */
  list(scope: EnvironmentScope): Promise<ContextSigningSecret[]>;
  /** @throws NOT_FOUND when the environment has no secret with this kid. */
  delete(scope: EnvironmentScope, kid: string): Promise<ContextSigningSecret>;
}
