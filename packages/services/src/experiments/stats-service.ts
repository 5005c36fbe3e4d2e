import { invalidArgument, notFound, type Principal, type Repositories, type StatsJob } from '@switchyard/core';
import { requireAllowed, requireAllowedSomewhere } from '../authorization.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * StatsService (svc.stats.v1): recompute jobs. The routes carry only an id, so the caller's org
 * scopes every lookup: an experiment or job of another org is NOT_FOUND (docs/contract.md "Roles (RBAC)", "Experiments and statistics").
 */
export class StatsService {
  constructor(
    private readonly repos: Pick<Repositories, 'experiments' | 'statsJobs'>,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Queues a recomputation of the experiment's results; the worker picks it up. While a job of the
   * experiment is queued (not yet running) that job is returned instead of a new one, so repeated
   * or concurrent triggers cost one computation (StatsJobRepository.create).
   * @throws INVALID_ARGUMENT when the id is not a UUID (400, docs/contract.md "Stats jobs"); NOT_FOUND when no experiment
   *   of the caller's org has it
   */
  async triggerRecompute(principal: Principal, experimentId: string): Promise<StatsJob> {
    // RBAC before anything is looked up: a system-org user or an SDK key is refused, not told 404.
    requireAllowedSomewhere(principal, 'stats.recompute', principal.orgId);
    if (!UUID.test(experimentId)) throw invalidArgument('experiment_id must be a UUID', 'experiment_id');
    const found = await this.repos.experiments.findInOrg({ orgId: principal.orgId }, experimentId);
    if (!found) throw notFound('experiment', experimentId);
    requireAllowed(principal, 'stats.recompute', { orgId: found.scope.orgId, projectId: found.scope.projectId, environmentId: found.scope.environmentId });
    return this.repos.statsJobs.create({ orgId: found.scope.orgId }, experimentId, this.now());
  }

  /** @throws NOT_FOUND when no job of the caller's org has the id (a malformed id included). */
  async getJob(principal: Principal, jobId: string): Promise<StatsJob> {
    requireAllowedSomewhere(principal, 'stats.read', principal.orgId);
    const job = await this.repos.statsJobs.get({ orgId: principal.orgId }, jobId);
    if (!job) throw notFound('job', jobId);
    // A job names its experiment only: its environment decides. An experiment deleted since is an org-level resource.
    const found = await this.repos.experiments.findInOrg({ orgId: job.orgId }, job.experimentId);
    requireAllowed(principal, 'stats.read', found ? found.scope : { orgId: job.orgId });
    return job;
  }
}
