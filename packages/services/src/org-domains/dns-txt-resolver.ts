import { Resolver } from 'node:dns/promises';
import type { TxtResolver } from '@switchyard/core';

/** Codes of a lookup that found nothing (no such name, or no TXT record there): an empty answer, not a failure. */
const NOTHING_THERE = new Set(['ENOTFOUND', 'ENODATA', 'NOTFOUND', 'NODATA']);

/**
 * TxtResolver over node's dns.Resolver (c-ares), pointed at DNS_SERVERS when set (else the system's
 * resolvers). Each query gives up after `timeoutMs` per try, two tries: a verification call never
 * hangs on a slow DNS server.
 */
export class DnsTxtResolver implements TxtResolver {
  private readonly resolver: Resolver;

  constructor(options: { servers?: readonly string[] | null; timeoutMs?: number } = {}) {
    this.resolver = new Resolver({ timeout: options.timeoutMs ?? 2_500, tries: 2 });
    if (options.servers && options.servers.length > 0) this.resolver.setServers([...options.servers]);
  }

  async resolveTxt(name: string): Promise<string[]> {
    try {
      return (await this.resolver.resolveTxt(name)).map((chunks) => chunks.join(''));
    } catch (error) {
      if (NOTHING_THERE.has((error as NodeJS.ErrnoException).code ?? '')) return [];
      throw error;
    }
  }
}
