import type { LoginThrottleRepository } from '@switchyard/core';
import type { Sql } from './connect.ts';

interface FailureCountRow {
  subject: string;
  count: number;
  oldest_at_ms: number | null;
}

/**
 * Failed logins in `login_failures`, one row per failure, shared by every instance. The table is
 * global by design (subjects are emails and IPs, not tenants); clear() keeps it pruned.
 */
export class PgLoginThrottleRepository implements LoginThrottleRepository {
  constructor(private readonly sql: Sql) {}

  async recordFailure(subjects: string[], nowMs: number): Promise<void> {
    const distinct = [...new Set(subjects)];
    if (distinct.length === 0) return;
    await this.sql`
      INSERT INTO login_failures (subject, at_ms)
      SELECT subject, ${nowMs}::int8 FROM unnest(${this.sql.array(distinct)}::text[]) AS s (subject)`;
  }

  async failuresSince(subjects: string[], sinceMs: number): Promise<Array<{ subject: string; count: number; oldestAtMs: number }>> {
    const distinct = [...new Set(subjects)];
    if (distinct.length === 0) return [];
    // Joining from the requested subjects answers those without failures too, in the order asked.
    const rows = await this.sql<FailureCountRow[]>`
      SELECT s.subject, count(f.at_ms)::int8 AS count, min(f.at_ms) AS oldest_at_ms
      FROM unnest(${this.sql.array(distinct)}::text[]) WITH ORDINALITY AS s (subject, position)
      LEFT JOIN login_failures f ON f.subject = s.subject AND f.at_ms >= ${sinceMs}::int8
      GROUP BY s.subject, s.position
      ORDER BY s.position`;
    return rows.map((row) => ({ subject: row.subject, count: row.count, oldestAtMs: row.oldest_at_ms ?? sinceMs }));
  }

  async newestFailures(subject: string, sinceMs: number, limit: number): Promise<number[]> {
    if (limit < 1) return [];
    // login_failures_by_subject (subject, at_ms) answers this from the newest end of the subject's range.
    const rows = await this.sql<Array<{ at_ms: number }>>`
      SELECT at_ms FROM login_failures
      WHERE subject = ${subject} AND at_ms >= ${sinceMs}::int8
      ORDER BY at_ms DESC
      LIMIT ${limit}`;
    return rows.map((row) => Number(row.at_ms));
  }

  async forgetOne(subjects: string[], atMs: number): Promise<void> {
    const distinct = [...new Set(subjects)];
    if (distinct.length === 0) return;
    // One row per subject: other attempts at the same millisecond keep theirs.
    await this.sql`
      DELETE FROM login_failures WHERE ctid IN (
        SELECT DISTINCT ON (subject) ctid FROM login_failures
        WHERE subject = ANY(${this.sql.array(distinct)}::text[]) AND at_ms = ${atMs}::int8)`;
  }

  /**
   * Rows have no key, so a batch is picked by ctid (a TID scan deletes it). The rows are never
   * updated, so a ctid read by the sub-select still names the same row when it is deleted. No
   * ORDER BY: the scan stops at the first `limit` old rows (no index on `at_ms` alone).
   */
  async pruneOlderThan(beforeMs: number, limit: number): Promise<number> {
    if (limit < 1) return 0;
    const result = await this.sql`
      DELETE FROM login_failures
      WHERE ctid = ANY(ARRAY(
        SELECT ctid FROM login_failures WHERE at_ms < ${beforeMs}::int8 LIMIT ${limit}))`;
    return result.count;
  }

  async clear(subject: string, beforeMs: number): Promise<void> {
    await this.sql`DELETE FROM login_failures WHERE subject = ${subject} OR at_ms < ${beforeMs}::int8`;
  }
}
