import { createHash, randomBytes } from 'node:crypto';

/** Hex SHA-256: how SDK keys and invitation tokens are stored (never the plaintext). */
export const sha256Hex = (value: string): string => createHash('sha256').update(value).digest('hex');

/** SDK keys look like `sdk_<43 chars>`; the first 12 characters are kept visible as the prefix. */
const SDK_KEY_PREFIX_LENGTH = 12;

export interface NewSdkKey {
  rawKey: string;
  keyPrefix: string;
  keyHash: string;
}

/** A new SDK key: 256 random bits, shown once to its creator, stored as a hash. */
export function generateSdkKey(kind: 'server' | 'client' = 'server'): NewSdkKey {
  // Client keys ship in browser pages and app binaries: the prefix tells them apart at a glance
  // (and lets secret scanners treat a leaked `sdk_` key as the emergency it is).
  const rawKey = `${kind === 'client' ? 'ck_' : 'sdk_'}${randomBytes(32).toString('base64url')}`;
  return { rawKey, keyPrefix: rawKey.slice(0, SDK_KEY_PREFIX_LENGTH), keyHash: sha256Hex(rawKey) };
}

/** A new opaque refresh token (256 random bits). */
export const generateRefreshToken = (): string => `rt_${randomBytes(32).toString('base64url')}`;

/** A new invitation token (256 random bits), shown once to the inviter. */
export const generateInvitationToken = (): string => `inv_${randomBytes(32).toString('base64url')}`;

/** API tokens look like `swy_<43 chars>`: the prefix tells the verifier (and secret scanners) what it is. */
export const API_TOKEN_PREFIX = 'swy_';

/** A new API token: 256 random bits, shown once to its creator, stored as a hash; 12 characters stay visible. */
export function generateApiToken(): { plaintext: string; prefix: string; hash: string } {
  const plaintext = `${API_TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
  return { plaintext, prefix: plaintext.slice(0, 12), hash: sha256Hex(plaintext) };
}
