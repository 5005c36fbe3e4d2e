import type { ExclusiveLock } from '@switchyard/core';
import type { Sql } from './connect.ts';

/**
 * The first key of every lock made here. Two-integer advisory locks do not share keys with the
 * single-bigint ones the migration and the stats scheduler take (PostgreSQL keeps the two key
 * spaces apart), and this class keeps them apart from other applications' two-integer locks.
 */
const LOCK_CLASS = 7243;

/**
 * ExclusiveLock on a session-level PostgreSQL advisory lock named by `name` (hashed to the second
 * key). The run holds one pooled connection for its whole length, since a session lock belongs
 * to a connection: `pg_try_advisory_lock` on it, the body (which uses the pool as usual), then
 * `pg_advisory_unlock`. If this process dies, PostgreSQL ends the session and frees the lock.
 */
export class PgAdvisoryLock implements ExclusiveLock {
  constructor(
    private readonly sql: Sql,
    private readonly name: string,
  ) {}

  async tryRun<T>(body: () => Promise<T>): Promise<{ ran: true; value: T } | { ran: false }> {
    const session = await this.sql.reserve();
    try {
      const [row] = await session<{ locked: boolean }[]>`
        SELECT pg_try_advisory_lock(${LOCK_CLASS}::int4, hashtext(${this.name})) AS locked`;
      if (!row?.locked) return { ran: false };
      try {
        return { ran: true, value: await body() };
      } finally {
        await session`SELECT pg_advisory_unlock(${LOCK_CLASS}::int4, hashtext(${this.name}))`.catch(() => {});
      }
    } finally {
      session.release();
    }
  }
}
