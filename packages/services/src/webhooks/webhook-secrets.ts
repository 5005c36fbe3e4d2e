import type { WebhookEndpoint } from '@switchyard/core';
import type { SecretBox } from '../sso/secret-box.ts';

/** What a sealed secret is bound to: a sealed value copied onto another endpoint's row does not open. */
export const sealedFor = (endpointId: string): string => `webhook:${endpointId}`;

/** How long the secret before a rotation keeps signing (both signatures are sent meanwhile). */
export const ROTATION_OVERLAP_MS = 24 * 3_600_000;

/** The secrets an attempt is signed with now: the current one, and the previous one while it overlaps. */
export function signingSecrets(box: SecretBox, endpoint: WebhookEndpoint, nowMs: number): string[] {
  const secrets = [box.open(endpoint.sealedSecret, sealedFor(endpoint.id))];
  if (endpoint.sealedPreviousSecret !== null && endpoint.previousSecretExpiresAtMs !== null && endpoint.previousSecretExpiresAtMs > nowMs) {
    secrets.push(box.open(endpoint.sealedPreviousSecret, sealedFor(endpoint.id)));
  }
  return secrets;
}
