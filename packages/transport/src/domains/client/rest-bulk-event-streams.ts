import type { FastifyRequest } from 'fastify';
import type { Principal } from '@switchyard/core';
import type { GatewayServices } from '../../gateway-services.ts';
import { windowedEtag } from './rest-channel-tokens.ts';
import { clientRouteCredential } from './rest-client-credentials.ts';
import { INACTIVITY_DELAY_SEC } from './rest-event-streams.ts';

/** The path of the browser event stream; the channel token is its `channel` query parameter. */
export const EVENT_STREAM_PATH = '/ofrep/v1/event-stream';

/** The client key as the request presented it (the one reader of client-route credentials). */
function presentedKey(request: FastifyRequest): string | undefined {
  const credential = clientRouteCredential(request, { bearerMayBeKey: true });
  return 'key' in credential ? credential.key : undefined;
}

/**
 * What a client key's bulk OFREP answer adds for its event stream (docs/client-side.md
 * "7. Streaming"): the ETag with the token window in it, and the body's closing text carrying
 * `eventStreams` (OFREP ADR-0008: `[{type: "sse", endpoint: {requestUri}, inactivityDelaySec}]`;
 * no `origin`, so the provider resolves the path against its own base URL, proxies included).
 * null for other callers, and while no channel token can be issued (a gateway that has not yet
 * received its sealing key): the answer is then the plain one, and the provider polls.
 */
export function clientBulkStream(services: Pick<GatewayServices, 'clientStreams'>, request: FastifyRequest, principal: Principal): { etag(etag: string): string; closing: string } | null {
  const streams = services.clientStreams;
  if (streams === undefined || principal.kind !== 'client_key') return null;
  const rawKey = presentedKey(request);
  if (rawKey === undefined) return null;
  const window = streams.tokens.window();
  const token = streams.tokens.issue(rawKey, principal.client.expiresAtMs);
  if (token === null) return null;
  const eventStreams = [{ type: 'sse', endpoint: { requestUri: `${EVENT_STREAM_PATH}?channel=${token}` }, inactivityDelaySec: INACTIVITY_DELAY_SEC }];
  return { etag: (etag) => windowedEtag(etag, window), closing: `],"eventStreams":${JSON.stringify(eventStreams)}}` };
}
