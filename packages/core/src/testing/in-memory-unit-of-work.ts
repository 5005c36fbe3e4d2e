import type { UnitOfWork } from '../ports/audit-ports.ts';
import type { Repositories } from '../ports/repositories.ts';
import type { InMemoryState } from './in-memory-state.ts';

/**
 * UnitOfWork over the shared in-memory tables: the state is copied before the work and put back
 * if the work throws, so a failed write leaves neither its changes nor its audit entry. It
 * isolates nothing from concurrent runs (a rollback also undoes what another run wrote meanwhile):
 * concurrency is tested against PostgreSQL.
 */
export class InMemoryUnitOfWork implements UnitOfWork {
  constructor(
    private readonly state: InMemoryState,
    private readonly repos: () => Repositories,
  ) {}

  async run<T>(work: (repos: Repositories) => Promise<T>): Promise<T> {
    const restore = this.state.snapshot();
    try {
      return await work(this.repos());
    } catch (error) {
      restore();
      throw error;
    }
  }
}
