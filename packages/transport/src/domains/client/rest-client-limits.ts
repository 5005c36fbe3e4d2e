import type { FastifyReply, FastifyRequest } from 'fastify';
import { RateLimitedError, type Principal } from '@switchyard/core';
import { keyKindOf, type ClientWork, type KeyKind } from '@switchyard/services';
import type { GatewayServices } from '../../gateway-services.ts';

type ClientEdge = Pick<GatewayServices, 'clientLimits' | 'clientMetrics'>;

/** The key kind of each request admitted by admitKeyRequest (read by the body limit and the 429 count). */
const keyKinds = new WeakMap<FastifyRequest, KeyKind>();

/** The kind of key that authenticated the request, once admitKeyRequest has seen it. */
export const recordedKeyKind = (request: FastifyRequest): KeyKind | undefined => keyKinds.get(request);

/**
 * The step every route client keys use takes right after authentication (docs/client-side.md
 * "6. Limits"): counts the request by key kind, then charges a client key's buckets for `work`
 * from the request's client address (`request.ip`: the TRUST_PROXY rule of the REST server).
 * `cost` is 1 per request, or the entries of an exposures or events request (at least 1: an empty
 * batch is still a request). Users (bearer tokens) are neither counted nor limited here.
 * @throws RateLimitedError (429 with Retry-After) when a client key is over a limit.
 */
export function admitKeyRequest(services: ClientEdge, request: FastifyRequest, principal: Principal, work: ClientWork, cost = 1): void {
  const kind = keyKindOf(principal);
  if (kind === undefined) return;
  keyKinds.set(request, kind);
  services.clientMetrics.request(kind, work);
  if (kind === 'client') services.clientLimits.take(work, principal, request.ip, Math.max(1, cost));
}

/** Counts a 304 answered to the request's key. */
export function countNotModified(services: ClientEdge, request: FastifyRequest): void {
  const kind = keyKinds.get(request);
  if (kind !== undefined) services.clientMetrics.notModified(kind);
}

/**
 * onError hook of the routes client keys use: a RateLimitedError (429) counted by the request's
 * key kind, whichever limit raised it (this instance's client buckets, or the services' ingest
 * limits). Runs on failures only, so it costs successful requests nothing.
 */
export function countRateLimited(services: ClientEdge, work: ClientWork) {
  return async (request: FastifyRequest, _reply: FastifyReply, error: Error): Promise<void> => {
    const kind = keyKinds.get(request);
    if (kind !== undefined && error instanceof RateLimitedError) services.clientMetrics.rateLimited(kind, work);
  };
}
