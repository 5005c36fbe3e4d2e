import type { WebhookDelivery, WebhookEndpoint } from '@switchyard/core';
import { webhookHeaders } from './webhook-signing.ts';
import { slackMessage, type WebhookPayload } from './webhook-slack.ts';

/** The most of an answer's body kept in the delivery log. */
export const KEPT_RESPONSE_BYTES = 1024;
/** The whole attempt's budget: connect, send, answer. */
export const DELIVERY_TIMEOUT_MS = 15_000;
const MAX_ERROR_LENGTH = 500;

/** What one HTTP attempt came to. */
export interface WebhookAttempt {
  /** null: no HTTP answer (refused address, unreachable, timeout). */
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  /** The first 1 KiB of the answer's body (UTF-8, cut at a character boundary). */
  response: string | null;
  /** The `Retry-After` header of the answer, as sent. */
  retryAfter: string | null;
  /** The guard refused the address (not public): FAILED_PRECONDITION from the guarded fetch. */
  refused: boolean;
}

/** The body sent to an endpoint: the standard payload, or a Slack message rendered from it. */
export function bodyFor(endpoint: Pick<WebhookEndpoint, 'format' | 'name'>, payloadText: string, publicUrl: string): string {
  if (endpoint.format === 'standard') return payloadText;
  const payload = JSON.parse(payloadText) as WebhookPayload;
  if (payload.type === 'webhook.test') {
    return JSON.stringify({ text: `Switchyard test message for the webhook "${endpoint.name.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;')}"` });
  }
  return JSON.stringify(slackMessage(payload, publicUrl));
}

const firstBytes = (bytes: Uint8Array): string => {
  if (bytes.length <= KEPT_RESPONSE_BYTES) return Buffer.from(bytes).toString('utf8');
  // Decoding a cut multi-byte character gives U+FFFD at the end: drop it.
  return Buffer.from(bytes.subarray(0, KEPT_RESPONSE_BYTES)).toString('utf8').replace(/\uFFFD$/, '');
};

/**
 * One attempt of a delivery: POST of the body with the Standard Webhooks headers, signed with each
 * secret given (current first, then the previous one during a rotation), through `fetchFn` (the
 * guarded fetch: public addresses only, no redirects followed, 15 s, bounded answer).
 */
export async function attemptDelivery(
  fetchFn: typeof fetch,
  endpoint: Pick<WebhookEndpoint, 'url' | 'format' | 'name'>,
  delivery: Pick<WebhookDelivery, 'messageId' | 'payload'>,
  secrets: readonly string[],
  options: { publicUrl: string; nowMs: number; clock?: () => number },
): Promise<WebhookAttempt> {
  const clock = options.clock ?? (() => performance.now());
  const body = bodyFor(endpoint, delivery.payload, options.publicUrl);
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'Switchyard-Webhooks/1',
    ...webhookHeaders(secrets, delivery.messageId, Math.floor(options.nowMs / 1000), body),
  };
  const started = clock();
  try {
    const response = await fetchFn(endpoint.url, { method: 'POST', headers, body, redirect: 'manual' });
    const bytes = new Uint8Array(await response.arrayBuffer());
    const ok = response.status >= 200 && response.status < 300;
    return {
      statusCode: response.status,
      durationMs: clock() - started,
      error: ok ? null : `the endpoint answered ${response.status}`,
      response: firstBytes(bytes),
      retryAfter: response.headers.get('retry-after'),
      refused: false,
    };
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    return {
      statusCode: null,
      durationMs: clock() - started,
      error: String((error as Error).message ?? error).slice(0, MAX_ERROR_LENGTH),
      response: null,
      retryAfter: null,
      refused: code === 'FAILED_PRECONDITION',
    };
  }
}
