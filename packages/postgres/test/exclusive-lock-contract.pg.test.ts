import { exclusiveLockContract } from '@switchyard/core/testing/contracts';
import { PgAdvisoryLock } from '../src/advisory-lock.pg.ts';
import { connect } from '../src/connect.ts';
import { createTestDatabase } from '../src/testing/test-database.ts';

// Two pools on one database, as two server instances have.
exclusiveLockContract('postgres', async () => {
  const db = await createTestDatabase();
  const first = connect(db.url, { poolSize: 2 });
  const second = connect(db.url, { poolSize: 2 });
  return {
    a: new PgAdvisoryLock(first, 'prune'),
    b: new PgAdvisoryLock(second, 'prune'),
    otherName: new PgAdvisoryLock(second, 'other'),
    async close() {
      try {
        await Promise.all([first.end({ timeout: 5 }), second.end({ timeout: 5 })]);
      } finally {
        await db.drop();
      }
    },
  };
});
