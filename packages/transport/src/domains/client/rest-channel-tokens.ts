import { createCipheriv, createDecipheriv, createHmac, hkdfSync } from 'node:crypto';

/**
 * Channel tokens of browser event streams (docs/client-side.md "7. Streaming").
 *
 * A browser's EventSource cannot send headers, so the stream URL that a client key's bulk OFREP
 * answer names carries a token instead. The token is stateless: the client key and an expiry,
 * sealed with AES-256-GCM under a key derived from the JWT secret (HKDF; a gateway gets the
 * derived key from the services, never the JWT secret). Any instance, single process or gateway,
 * opens it, and then checks the key exactly as a request presenting it is checked (revoked,
 * expired, origin list), so a token outlives neither its key nor its key's settings.
 *
 * It holds no evaluation context and nothing personal (a client key is public: it ships in the
 * page). Unreadable without the server's key, so a URL that leaks into a log shows no key.
 *
 * Tokens are issued per time window: every answer for one key within a window carries the same
 * token (a synthetic IV: the HMAC of the plaintext), so the stock provider, which reconnects only
 * when the URL changes, keeps its stream across refetches. A token stays valid until the end of
 * the next window (one to two windows). The bulk answer's ETag names the window too
 * (`windowedEtag`), so a 304 never vouches for a token older than the window.
 */

interface ChannelKeys {
  seal: Buffer;
  iv: Buffer;
}

/** HKDF of the JWT secret: the key that seals channel tokens and nothing else (32 bytes). */
export function deriveChannelTokenKey(jwtSecret: string): Buffer {
  return Buffer.from(hkdfSync('sha256', jwtSecret, 'switchyard', 'switchyard client stream channel tokens v1', 32));
}

function subkeys(key: Buffer): ChannelKeys {
  return {
    seal: Buffer.from(hkdfSync('sha256', key, '', 'seal', 32)),
    iv: Buffer.from(hkdfSync('sha256', key, '', 'synthetic iv', 32)),
  };
}

export interface ChannelGrant {
  /** The client key sealed in the token: the stream checks it like any request's key. */
  rawKey: string;
  /** When the token stops opening streams (epoch ms). */
  expiresAtMs: number;
}

export type ChannelTokenRefusal = 'malformed' | 'expired';

const VERSION = 'c1';
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** A longer `channel` parameter is refused unread (keys are at most 256 characters). */
export const MAX_CHANNEL_TOKEN_LENGTH = 512;

export class ChannelTokens {
  private keys: { source: Buffer; derived: ChannelKeys } | null = null;

  constructor(
    /** The sealing key, or null while a gateway has not received it yet (then no token is issued). */
    private readonly key: () => Buffer | null,
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** The current window's number: part of the bulk ETag, so a 304 never outlives the token it vouches for. */
  window(): number {
    return Math.floor(this.now() / this.windowMs);
  }

  /** Whether tokens can be issued (a gateway before it received the key cannot). */
  ready(): boolean {
    return this.derived() !== null;
  }

  /**
   * The token of a client key for the current window (the same one all window long); never valid
   * past the key's own expiry. null when no sealing key is available (the answer names no stream).
   */
  issue(rawKey: string, keyExpiresAtMs: number | null): string | null {
    const keys = this.derived();
    if (keys === null) return null;
    let expiresAtMs = (this.window() + 2) * this.windowMs;
    if (keyExpiresAtMs !== null) expiresAtMs = Math.min(expiresAtMs, keyExpiresAtMs);
    const plaintext = Buffer.from(`${VERSION}|${Math.floor(expiresAtMs / 1000)}|${rawKey}`);
    const iv = createHmac('sha256', keys.iv).update(plaintext).digest().subarray(0, IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', keys.seal, iv);
    const sealed = Buffer.concat([iv, cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
    return sealed.toString('base64url');
  }

  /** What a token grants: 'malformed' for anything not sealed by this deployment, 'expired' past its expiry. */
  open(token: string): ChannelGrant | ChannelTokenRefusal {
    const keys = this.derived();
    if (keys === null || token.length > MAX_CHANNEL_TOKEN_LENGTH || !/^[A-Za-z0-9_-]+$/.test(token)) return 'malformed';
    const sealed = Buffer.from(token, 'base64url');
    if (sealed.length <= IV_BYTES + TAG_BYTES) return 'malformed';
    let plaintext: string;
    try {
      const decipher = createDecipheriv('aes-256-gcm', keys.seal, sealed.subarray(0, IV_BYTES));
      decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
      plaintext = Buffer.concat([decipher.update(sealed.subarray(IV_BYTES, sealed.length - TAG_BYTES)), decipher.final()]).toString();
    } catch {
      return 'malformed';
    }
    const [version, expSeconds, ...rest] = plaintext.split('|');
    const rawKey = rest.join('|');
    if (version !== VERSION || !expSeconds || rawKey === '') return 'malformed';
    const expiresAtMs = Number(expSeconds) * 1000;
    if (!(expiresAtMs > this.now())) return 'expired';
    return { rawKey, expiresAtMs };
  }

  private derived(): ChannelKeys | null {
    const source = this.key();
    if (source === null) return null;
    if (this.keys?.source !== source) this.keys = { source, derived: subkeys(source) };
    return this.keys.derived;
  }
}

/**
 * A client-key bulk answer's ETag: the content hash and the token window. Within a window a
 * client revalidates to 304 as before; in the next it gets the answer again, with the new token.
 */
export function windowedEtag(etag: string, window: number): string {
  const bare = etag.startsWith('"') && etag.endsWith('"') ? etag.slice(1, -1) : etag;
  return `"${bare}.w${window.toString(36)}"`;
}
