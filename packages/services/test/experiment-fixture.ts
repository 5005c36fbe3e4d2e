import assert from 'node:assert/strict';
import { isDomainError, type DomainError, type EnvironmentScope, type ErrorCode, type Principal, type Repositories } from '@switchyard/core';
import { InMemoryState, createInMemoryRepositories } from '@switchyard/core/testing';
import { ExperimentService, ScopeResolver, StatsService } from '../src/index.ts';

/** An org with one environment holding a 50/50 flag `checkout` and metrics purchase (bool), revenue (double), clicks (int). */
export interface ExperimentWorld {
  state: InMemoryState;
  repos: Repositories;
  scope: EnvironmentScope;
  admin: Principal;
  /** A user of another org. */
  stranger: Principal;
  experiments: ExperimentService;
  stats: StatsService;
}

export async function experimentWorld(): Promise<ExperimentWorld> {
  const state = new InMemoryState();
  const repos = createInMemoryRepositories(state);
  const org = await repos.orgs.create({ name: 'acme' });
  const other = await repos.orgs.create({ name: 'other' });
  const project = await repos.projects.create({ orgId: org.id }, { name: 'shop' });
  const environment = await repos.environments.create({ orgId: org.id, projectId: project.id }, { name: 'prod' });
  const scope = { orgId: org.id, projectId: project.id, environmentId: environment.id };
  await repos.flags.createDefinition(scope, {
    key: 'checkout', description: '', value_type: 'string',
    variants: [{ key: 'control', value: 'old' }, { key: 'treatment', value: 'new' }, { key: 'third', value: 'x' }],
  });
  await repos.flags.updateState(scope, 'checkout', {
    enabled: true,
    rules: [{ id: 'split', conditions: [], allocation: { context_hash_specs: {}, buckets: [{ variant_key: 'control', weight_milli: 500 }, { variant_key: 'treatment', weight_milli: 500 }] } }],
  });
  await repos.eventDefinitions.create(scope, { key: 'purchase', description: '', valueType: 'bool' });
  await repos.eventDefinitions.create(scope, { key: 'revenue', description: '', valueType: 'double' });
  await repos.eventDefinitions.create(scope, { key: 'clicks', description: '', valueType: 'int' });
  const admin: Principal = { kind: 'user', userId: 'u-admin', orgId: org.id, role: 'org_admin', isSystem: false };
  const stranger: Principal = { kind: 'user', userId: 'u-other', orgId: other.id, role: 'org_admin', isSystem: false };
  return { state, repos, scope, admin, stranger, experiments: new ExperimentService(repos, new ScopeResolver(repos)), stats: new StatsService(repos) };
}

export async function rejectsWith(call: Promise<unknown>, code: ErrorCode, message?: RegExp): Promise<DomainError> {
  let caught: unknown;
  await assert.rejects(call, (error: unknown) => {
    caught = error;
    return true;
  });
  assert.ok(isDomainError(caught), `a DomainError, got ${String(caught)}`);
  assert.equal(caught.code, code, caught.message);
  if (message) assert.match(caught.message, message);
  return caught;
}
