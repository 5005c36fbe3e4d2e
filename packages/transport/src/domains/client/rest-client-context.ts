import type { FastifyRequest } from 'fastify';
import { applyContextBinding, isDomainError, permissionDenied, type Principal } from '@switchyard/core';
import type { ContextBinding } from '@switchyard/services';
import type { GatewayServices } from '../../gateway-services.ts';
import { mapContext, NO_TARGETING_KEY, type MappedContext, type OfrepBody } from '../flags/ofrep-rest-context.ts';

/** A client key's principal. */
export type ClientPrincipal = Extract<Principal, { kind: 'client_key' }>;

/**
 * The context token of a client key's request, verified from keys in memory: the binding when the
 * key requires signing, null when it does not (docs/client-side.md "4. Signed contexts"). Every
 * refusal is counted as a signature failure.
 * @throws UNAUTHENTICATED (missing, expired, forged) or PERMISSION_DENIED (another environment's).
 */
export async function bindContextToken(
  services: Pick<GatewayServices, 'contextTokens' | 'clientMetrics'>,
  principal: ClientPrincipal,
  contextToken: string | undefined,
): Promise<ContextBinding | null> {
  try {
    return await services.contextTokens.bind(principal, contextToken);
  } catch (error) {
    if (isDomainError(error) && (error.code === 'UNAUTHENTICATED' || error.code === 'PERMISSION_DENIED')) services.clientMetrics.signatureFailed('client');
    throw error;
  }
}

/**
 * The evaluation context of a client key's OFREP request: the one place it is built, so what a
 * client may claim about itself is decided here. The body's context, mapped as for server keys;
 * with a binding, the token's `sub` is the targeting key and, in `context` mode, its `ctx`
 * attributes replace the body's.
 * @throws PERMISSION_DENIED when the body names another targeting key than the token's.
 */
export function clientEvaluationContext(request: FastifyRequest, binding: ContextBinding | undefined): MappedContext {
  const mapped = mapContext(request.body as OfrepBody | undefined);
  if (binding === undefined) return mapped;
  const claimed = { key: mapped.targetingKey, parameters: mapped.context.parameters ?? {} };
  const bound = applyContextBinding(binding.mode, binding.claims, claimed);
  if (bound === null) throw permissionDenied('context.targetingKey is not the one the context token vouches for (sub)');
  return { targetingKey: bound.key, context: { ...mapped.context, key: bound.key ?? NO_TARGETING_KEY, parameters: bound.parameters } };
}
