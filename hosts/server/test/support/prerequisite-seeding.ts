import type { EnvironmentScope, Flag, Prerequisite } from '@switchyard/core';
import type { Tenant } from './rest-client.ts';
import type { TestServer } from './test-server.ts';

/**
 * Puts prerequisites into the flags the server's evaluation reads (the read side of issue 37, tested
 * apart from the write routes): the repository's `list`, which the services' definition snapshots
 * load, answers the environment's flags with `prerequisites` as given here (other flags as stored).
 * The environment's snapshot is dropped, so every evaluation host (the services, a gateway through
 * FlagService.Sync, the SDKs through the sync stream) reloads them. Call again to change them.
 */
export function seedPrerequisites(ts: TestServer, tenant: Tenant, byFlag: Record<string, Prerequisite[]>): void {
  const repos = ts.server.repos;
  let seeded = seededBy.get(ts);
  if (seeded === undefined) {
    const map = new Map<string, Record<string, Prerequisite[]>>();
    seeded = map;
    seededBy.set(ts, map);
    const list = repos.flags.list.bind(repos.flags);
    repos.flags.list = async (scope: EnvironmentScope): Promise<Flag[]> => {
      const flags = await list(scope);
      const mine = map.get(scope.environmentId);
      if (mine === undefined) return flags;
      return flags.map((flag) => (mine[flag.key] === undefined ? flag : { ...flag, prerequisites: mine[flag.key] }));
    };
  }
  seeded.set(tenant.environmentId, byFlag);
  ts.server.services.snapshots.invalidate({ environmentId: tenant.environmentId });
}

const seededBy = new WeakMap<TestServer, Map<string, Record<string, Prerequisite[]>>>();

/** Polls `check` (which throws until it holds) for up to `ms`: a gateway follows the services' changes a moment later. */
export async function eventually<T>(check: () => Promise<T>, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}
