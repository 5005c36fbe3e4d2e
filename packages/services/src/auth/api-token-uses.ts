import { SDK_KEY_USE_INTERVAL_MS, type ApiTokenRepository } from '@switchyard/core';

/** Tokens whose last write is remembered at most; beyond, the memory starts over (the store still writes once a minute). */
const MAX_REMEMBERED = 10_000;

/**
 * Writes an API token's `last_used_at_ms` at most once a minute per token (docs/access.md "API
 * tokens"). Called by the services' verifier on every accepted token: in a gateway deployment the
 * services verify each forwarded credential again, so every use passes here whatever the topology.
 * The write is not awaited by the request; the repository itself skips a token written less than a
 * minute ago, so several instances do not write more often either.
 */
export class ApiTokenUseRecorder {
  private readonly writtenAt = new Map<string, number>();

  constructor(
    private readonly apiTokens: Pick<ApiTokenRepository, 'recordUses'>,
    private readonly now: () => number = Date.now,
    private readonly onError: (error: unknown) => void = () => {},
  ) {}

  used(tokenId: string): void {
    const now = this.now();
    const last = this.writtenAt.get(tokenId);
    if (last !== undefined && now - last < SDK_KEY_USE_INTERVAL_MS) return;
    if (this.writtenAt.size >= MAX_REMEMBERED) this.writtenAt.clear();
    this.writtenAt.set(tokenId, now);
    this.apiTokens.recordUses([tokenId], SDK_KEY_USE_INTERVAL_MS).catch((error: unknown) => {
      // Not written: the next use tries again.
      this.writtenAt.delete(tokenId);
      this.onError(error);
    });
  }
}
