import { createHmac, randomBytes } from 'node:crypto';

/** The prefix of a secret (Standard Webhooks): `whsec_` + base64 of the key bytes. */
export const SECRET_PREFIX = 'whsec_';
/** Bytes of a new secret's key (256 bits, within the specification's 24..64). */
const SECRET_BYTES = 32;

/** A new endpoint secret: `whsec_` + base64 of 32 random bytes. */
export const newWebhookSecret = (): string => `${SECRET_PREFIX}${randomBytes(SECRET_BYTES).toString('base64')}`;

/** The HMAC key of a secret: the bytes its base64 part decodes to. */
const keyOf = (secret: string): Buffer => Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');

/**
 * One Standard Webhooks signature: `v1,` + base64 of HMAC-SHA256 over `${id}.${timestamp}.${body}`
 * (timestamp in whole seconds), keyed with the secret's bytes.
 */
export function signWebhook(secret: string, id: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', keyOf(secret)).update(`${id}.${timestampSeconds}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/** The headers of one attempt: `webhook-signature` holds a signature per secret (current first), space-separated. */
export function webhookHeaders(secrets: readonly string[], id: string, timestampSeconds: number, body: string): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': secrets.map((secret) => signWebhook(secret, id, timestampSeconds, body)).join(' '),
  };
}
