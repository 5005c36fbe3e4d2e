import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { failedPrecondition } from '@switchyard/core';

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * Encrypts provider secrets at rest (docs/sso.md "Secrets"): AES-256-GCM under SSO_SECRETS_KEY,
 * with the provider's id as associated data, so a ciphertext copied onto another provider's row
 * does not decrypt. Stored as `v1.<base64url of iv | tag | ciphertext>`.
 */
export class SecretBox {
  private readonly key: Buffer;

  /** `secret`: the configured key (at least 32 characters); SHA-256 makes it a 256-bit key. */
  constructor(secret: string) {
    if (secret.length < 32) throw new RangeError('the secrets key must be at least 32 characters');
    this.key = createHash('sha256').update(secret).digest();
  }

  seal(plaintext: string, boundTo: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(boundTo));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return `${VERSION}.${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url')}`;
  }

  /** @throws FAILED_PRECONDITION when it does not decrypt (another key, another provider, tampered). */
  open(sealed: string, boundTo: string): string {
    const [version, encoded] = sealed.split('.');
    const raw = Buffer.from(encoded ?? '', 'base64url');
    if (version !== VERSION || raw.length < IV_BYTES + TAG_BYTES) throw undecryptable();
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, IV_BYTES));
      decipher.setAAD(Buffer.from(boundTo));
      decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
    } catch {
      throw undecryptable();
    }
  }
}

const undecryptable = () =>
  failedPrecondition("the provider's client secret cannot be decrypted with the configured SSO_SECRETS_KEY; save the secret again");
