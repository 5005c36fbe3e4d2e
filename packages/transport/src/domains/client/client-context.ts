import type { FastifyRequest } from 'fastify';
import type { Principal } from '@switchyard/core';
import { mapContext, type MappedContext, type OfrepBody } from '../flags/ofrep-context.ts';

/** A client key's principal. */
export type ClientPrincipal = Extract<Principal, { kind: 'client_key' }>;

/**
 * The evaluation context of a client key's OFREP request: the one place it is built, so what a
 * client may claim about itself (signed contexts, docs/client-side.md "Signed contexts") is
 * decided here. Today: the body's context, mapped as for server keys.
 */
export function clientEvaluationContext(request: FastifyRequest, _principal: ClientPrincipal): MappedContext {
  return mapContext(request.body as OfrepBody | undefined);
}
