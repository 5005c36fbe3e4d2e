import { failedPrecondition, invalidArgument, notFound } from '../errors/domain-error.ts';
import type { StatsJob } from '../model/entities.ts';
import type { StatsJobRepository } from '../ports/experiment-ports.ts';
import type { OrgScope } from '../ports/scopes.ts';
import type { InMemoryState } from './in-memory-state.ts';

/** PostgreSQL stores these ids as uuid and rejects anything else; the fake answers the same way. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Stats recompute jobs in memory. claimNext runs without awaiting, so two claims can never take the
 * same job, as FOR UPDATE SKIP LOCKED guarantees in PostgreSQL; orgs take turns as in the adapter.
 * create hands back the experiment's queued job if there is one.
 *
 * startedAtMs records the FIRST claim and is kept when an expired lease is claimed again: it answers
 * "since when has this job been worked on"; `attempts` and the lease tell the retries apart.
 */
export class InMemoryStatsJobRepository implements StatsJobRepository {
  private readonly state: InMemoryState;

  constructor(state: InMemoryState) {
    this.state = state;
  }

  async create(scope: OrgScope, experimentId: string, nowMs: number): Promise<StatsJob> {
    if (!UUID.test(scope.orgId)) throw notFound('organisation', scope.orgId);
    if (!UUID.test(experimentId)) throw notFound('experiment', experimentId);
    // At most one queued job per experiment: a trigger while one is queued gets it back.
    for (const queued of this.state.statsJobs.values()) {
      if (queued.experimentId === experimentId && queued.status === 'pending') {
        if (queued.orgId !== scope.orgId) throw notFound('experiment', experimentId);
        return { ...queued };
      }
    }
    const job: StatsJob = {
      id: this.state.newId(),
      orgId: scope.orgId,
      experimentId,
      status: 'pending',
      error: '',
      createdAtMs: nowMs,
      startedAtMs: 0,
      completedAtMs: 0,
      leaseExpiresAtMs: 0,
      attempts: 0,
    };
    this.state.statsJobs.set(job.id, job);
    return { ...job };
  }

  async get(scope: OrgScope, jobId: string): Promise<StatsJob | null> {
    const job = this.state.statsJobs.get(jobId);
    return job && job.orgId === scope.orgId ? { ...job } : null;
  }

  async claimNext(nowMs: number, leaseMs: number): Promise<StatsJob | null> {
    const turn = (job: StatsJob): number => this.state.statsJobTurns.get(job.orgId) ?? 0;
    const claimable = [...this.state.statsJobs.values()]
      .filter((job) => job.status === 'pending' || (job.status === 'running' && job.leaseExpiresAtMs < nowMs))
      // Orgs take turns (least recently served first), then oldest first; the id breaks ties the
      // way the SQL ORDER BY COALESCE(last_turn, 0), created_at_ms, id does.
      .sort((a, b) => turn(a) - turn(b) || a.createdAtMs - b.createdAtMs || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const job = claimable[0];
    if (!job) return null;
    this.state.statsJobTurnCounter += 1;
    this.state.statsJobTurns.set(job.orgId, this.state.statsJobTurnCounter);
    job.status = 'running';
    if (job.startedAtMs === 0) job.startedAtMs = nowMs;
    job.leaseExpiresAtMs = nowMs + leaseMs;
    job.attempts += 1;
    return { ...job };
  }

  async complete(jobId: string, nowMs: number): Promise<StatsJob> {
    const job = this.requireRunning(jobId);
    job.status = 'completed';
    job.completedAtMs = nowMs;
    return { ...job };
  }

  async fail(jobId: string, error: string, nowMs: number): Promise<StatsJob> {
    if (error.trim() === '') throw invalidArgument('a failed job needs an error text', 'error');
    const job = this.requireRunning(jobId);
    job.status = 'failed';
    job.error = error;
    job.completedAtMs = nowMs;
    return { ...job };
  }

  private requireRunning(jobId: string): StatsJob {
    const job = this.state.statsJobs.get(jobId);
    if (!job) throw notFound('stats job', jobId);
    if (job.status !== 'running') throw failedPrecondition(`stats job is ${job.status}, not running`);
    return job;
  }
}
