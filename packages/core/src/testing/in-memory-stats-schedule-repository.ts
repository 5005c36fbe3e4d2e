import type { StatsJob } from '../model/entities.ts';
import type { StatsScheduleRepository } from '../ports/experiment-data-ports.ts';
import type { InMemoryState } from './in-memory-state.ts';

/**
 * The scheduler's view of stats jobs in memory. Each call runs without awaiting, so it is atomic
 * the way the PostgreSQL adapter's advisory-locked transaction is.
 */
export class InMemoryStatsScheduleRepository implements StatsScheduleRepository {
  private readonly state: InMemoryState;

  constructor(state: InMemoryState) {
    this.state = state;
  }

  async enqueueDue(nowMs: number, intervalMs: number): Promise<StatsJob[]> {
    const jobs = [...this.state.statsJobs.values()];
    const created: StatsJob[] = [];
    for (const { scope, experiment } of this.state.experiments.values()) {
      if (experiment.status !== 'EXPERIMENT_STATUS_ACTIVE') continue;
      const results = this.state.results.get(experiment.id)?.results;
      if (results && results.nextRunAtMs > nowMs) continue;
      const mine = jobs.filter((job) => job.experimentId === experiment.id);
      if (mine.some((job) => job.status === 'pending' || job.status === 'running' || job.createdAtMs > nowMs - intervalMs)) continue;
      const job: StatsJob = {
        id: this.state.newId(), orgId: scope.orgId, experimentId: experiment.id, status: 'pending', error: '',
        createdAtMs: nowMs, startedAtMs: 0, completedAtMs: 0, leaseExpiresAtMs: 0, attempts: 0,
      };
      this.state.statsJobs.set(job.id, job);
      created.push({ ...job });
    }
    return created;
  }

  async renewLease(jobId: string, attempts: number, nowMs: number, leaseMs: number): Promise<boolean> {
    const job = this.state.statsJobs.get(jobId);
    if (!job || job.status !== 'running' || job.attempts !== attempts) return false;
    job.leaseExpiresAtMs = nowMs + leaseMs;
    return true;
  }

  async pruneFinished(beforeMs: number): Promise<number> {
    let removed = 0;
    for (const [id, job] of this.state.statsJobs) {
      if ((job.status === 'completed' || job.status === 'failed') && job.completedAtMs < beforeMs) {
        this.state.statsJobs.delete(id);
        removed += 1;
      }
    }
    const withJobs = new Set([...this.state.statsJobs.values()].map((job) => job.orgId));
    for (const orgId of this.state.statsJobTurns.keys()) if (!withJobs.has(orgId)) this.state.statsJobTurns.delete(orgId);
    return removed;
  }
}
