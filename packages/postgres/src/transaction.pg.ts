import type { Sql, TransactionSql } from './connect.ts';

/**
 * Runs `work` in a transaction of its own, or — when `sql` is already a transaction (a unit of
 * work's repositories, docs/decisions.md "Change history") — in a savepoint of it, so a
 * repository's multi-statement write stays atomic either way and a caught failure inside
 * it undoes only its own statements.
 */
export function transaction<T>(sql: Sql, work: (tx: TransactionSql) => Promise<T>): Promise<T> {
  const inTransaction = sql as unknown as Partial<TransactionSql>;
  if (typeof inTransaction.savepoint === 'function') return inTransaction.savepoint(work) as Promise<T>;
  return sql.begin(work) as Promise<T>;
}
