import type { Repositories, UnitOfWork } from '@switchyard/core';
import type { Sql } from './connect.ts';
import { transaction } from './transaction.pg.ts';

/**
 * UnitOfWork on one PostgreSQL transaction: the work gets every repository built on the
 * transaction's connection, so a write and its audit entry commit together or not at all.
 * Inside a run, a nested run is a savepoint.
 */
export class PgUnitOfWork implements UnitOfWork {
  constructor(
    private readonly sql: Sql,
    private readonly repositoriesOn: (sql: Sql) => Repositories,
  ) {}

  run<T>(work: (repos: Repositories) => Promise<T>): Promise<T> {
    // A transaction's sql answers the same tagged templates as the pool's; it lacks only what a
    // repository never calls inside one (begin, reserve, listen).
    return transaction(this.sql, (tx) => work(this.repositoriesOn(tx as unknown as Sql)));
  }
}
