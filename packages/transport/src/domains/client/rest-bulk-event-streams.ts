import type { FastifyRequest } from 'fastify';
import type { Principal } from '@switchyard/core';
import type { GatewayServices } from '../../gateway-services.ts';
import type { ClientAnswer } from './rest-client-answers.ts';
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
export function clientBulkStream(services: Pick<GatewayServices, 'clientStreams'>, request: FastifyRequest, principal: Principal): BulkStream | null {
  const streams = services.clientStreams;
  if (streams === undefined || principal.kind !== 'client_key') return null;
  const rawKey = presentedKey(request);
  if (rawKey === undefined) return null;
  const window = streams.tokens.window();
  const token = streams.tokens.issue(rawKey, principal.client.expiresAtMs);
  if (token === null) return null;
  const eventStreams = [{ type: 'sse', endpoint: { requestUri: `${EVENT_STREAM_PATH}?channel=${token}` }, inactivityDelaySec: INACTIVITY_DELAY_SEC }];
  return new BulkStream(window, `],"eventStreams":${JSON.stringify(eventStreams)}}`);
}

/** A client bulk answer's stream additions: the windowed ETag and the closing text that names the stream. */
export class BulkStream {
  private readonly suffix: string;

  constructor(
    private readonly window: number,
    /** Replaces the answer's final `]}`. */
    readonly closing: string,
  ) {
    this.suffix = `.w${window.toString(36)}"`;
  }

  etag(etag: string): string {
    return windowedEtag(etag, this.window);
  }

  /**
   * The If-None-Match tags of this window, as the content ETags they wrap: a tag of an older window
   * (its token may have expired) matches nothing, so the client gets the answer with a new token.
   */
  currentWindowTags(ifNoneMatch: string | undefined): string | undefined {
    if (ifNoneMatch === undefined) return undefined;
    const tags = ifNoneMatch
      .split(',')
      .map((tag) => tag.trim().replace(/^W\//, ''))
      .filter((tag) => tag.endsWith(this.suffix))
      .map((tag) => `${tag.slice(0, -this.suffix.length)}"`);
    return tags.length === 0 ? undefined : tags.join(', ');
  }

  /** The answer with its ETag windowed and its body naming the stream (`]}` replaced by `closing`). */
  addTo(answer: ClientAnswer): ClientAnswer {
    const tagged: ClientAnswer = { ...answer };
    if (answer.etag !== undefined) tagged.etag = this.etag(answer.etag);
    if (answer.status !== 200) return tagged;
    if (answer.bytes !== undefined && answer.bytes.subarray(-2).toString() === ']}') {
      tagged.bytes = Buffer.concat([answer.bytes.subarray(0, -2), Buffer.from(this.closing)]);
    } else if (answer.json !== undefined && answer.json.endsWith(']}')) {
      tagged.json = `${answer.json.slice(0, -2)}${this.closing}`;
    }
    return tagged;
  }

}
