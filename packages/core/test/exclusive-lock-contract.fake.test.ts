import { InMemoryExclusiveLock } from '../src/testing/index.ts';
import { exclusiveLockContract } from '../src/testing/contracts/index.ts';

// Locks sharing one `held` set stand for instances sharing one database.
exclusiveLockContract('in-memory', async () => {
  const held = new Set<string>();
  return {
    a: new InMemoryExclusiveLock('prune', held),
    b: new InMemoryExclusiveLock('prune', held),
    otherName: new InMemoryExclusiveLock('other', held),
    close: async () => {},
  };
});
