import { createHash, randomBytes } from 'node:crypto';

/** Hex SHA-256: how SDK keys and invitation tokens are stored (never the plaintext). */
export const sha256Hex = (value: string): string => createHash('sha256').update(value).digest('hex');

/** Keys and API tokens look like `sdk_<43 chars>`; the first 12 characters are kept visible as the prefix. */
const VISIBLE_PREFIX_LENGTH = 12;

export interface NewSdkKey {
  rawKey: string;
  keyPrefix: string;
  keyHash: string;
}

/** A new SDK key: 256 random bits, shown once to its creator, stored as a hash. */
export function generateSdkKey(kind: 'server' | 'client' = 'server'): NewSdkKey {
  // Client keys ship in browser pages and app binaries: the prefix tells them apart at a glance
  // (and lets secret scanners treat a leaked `sdk_` key as the emergency it is).
  return newStoredSecret(kind === 'client' ? 'ck_' : 'sdk_');
}

/** 256 random bits after `prefix`, with what is stored of it: the visible prefix and the hash. */
function newStoredSecret(prefix: string): NewSdkKey {
  const rawKey = `${prefix}${randomBytes(32).toString('base64url')}`;
  return { rawKey, keyPrefix: rawKey.slice(0, VISIBLE_PREFIX_LENGTH), keyHash: sha256Hex(rawKey) };
}

/** A new opaque refresh token (256 random bits). */
export const generateRefreshToken = (): string => `rt_${randomBytes(32).toString('base64url')}`;

/** A new invitation token (256 random bits), shown once to the inviter. */
export const generateInvitationToken = (): string => `inv_${randomBytes(32).toString('base64url')}`;

/** API tokens look like `swy_<43 chars>`: the prefix tells the verifier (and secret scanners) what it is. */
export const API_TOKEN_PREFIX = 'swy_';

/** A new API token: 256 random bits, shown once to its creator, stored as a hash; 12 characters stay visible. */
export function generateApiToken(): { plaintext: string; prefix: string; hash: string } {
  const { rawKey, keyPrefix, keyHash } = newStoredSecret(API_TOKEN_PREFIX);
  return { plaintext: rawKey, prefix: keyPrefix, hash: keyHash };
}
