import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { AuditDraft } from '../../model/entities.ts';
import {
  MALFORMED_ID,
  rejectsWithCode,
  unique,
  useRepositories,
  type MakeTenancyRepositories,
} from './tenancy-contract-support.ts';

const draft = (orgId: string, resourceId: string): AuditDraft => ({
  orgId,
  atMs: Date.now(),
  actor: { type: 'user', id: 'user-1' },
  action: 'project.create',
  resourceType: 'project',
  resourceId,
  projectId: resourceId,
  environmentId: null,
  before: null,
  after: { name: 'p' },
  details: {},
});

/** A write and its audit entry commit together or not at all (docs/decisions.md "Change history"). */
export function unitOfWorkContract(name: string, makeRepos: MakeTenancyRepositories): void {
  describe(`UnitOfWork contract: ${name}`, () => {
    const repos = useRepositories(makeRepos);

    test('a run that resolves keeps its write and its entry, and answers what the work returned', async () => {
      const org = await repos().orgs.create({ name: unique('org') });
      const project = await repos().unitOfWork.run(async (tx) => {
        const created = await tx.projects.create({ orgId: org.id }, { name: unique('project') });
        await tx.audit.append(draft(org.id, created.id));
        return created;
      });
      assert.deepEqual(await repos().projects.get({ orgId: org.id }, project.id), project);
      const entries = (await repos().audit.list({ orgId: org.id }, { limit: 10 })).items;
      assert.deepEqual(entries.map((entry) => entry.resourceId), [project.id]);
    });

    test('an audit append that fails undoes the write before it', async () => {
      const org = await repos().orgs.create({ name: unique('org') });
      const name = unique('project');
      await rejectsWithCode(
        repos().unitOfWork.run(async (tx) => {
          const created = await tx.projects.create({ orgId: org.id }, { name });
          await tx.audit.append(draft(MALFORMED_ID, created.id));
        }),
        'NOT_FOUND',
      );
      assert.deepEqual(await repos().projects.list({ orgId: org.id }), [], 'the project was not kept');
    });

    test('a write that fails after its entry leaves no entry', async () => {
      const org = await repos().orgs.create({ name: unique('org') });
      const taken = unique('project');
      await repos().projects.create({ orgId: org.id }, { name: taken });
      await rejectsWithCode(
        repos().unitOfWork.run(async (tx) => {
          await tx.audit.append(draft(org.id, 'second'));
          await tx.projects.create({ orgId: org.id }, { name: taken });
        }),
        'ALREADY_EXISTS',
      );
      assert.deepEqual((await repos().audit.list({ orgId: org.id }, { limit: 10 })).items, []);
      assert.equal((await repos().projects.list({ orgId: org.id })).length, 1);
    });

    test('an error thrown by the work itself undoes every write of the run', async () => {
      const org = await repos().orgs.create({ name: unique('org') });
      await assert.rejects(
        repos().unitOfWork.run(async (tx) => {
          const created = await tx.projects.create({ orgId: org.id }, { name: unique('project') });
          await tx.environments.create({ orgId: org.id, projectId: created.id }, { name: unique('env') });
          await tx.audit.append(draft(org.id, created.id));
          throw new Error('changed my mind');
        }),
        /changed my mind/,
      );
      assert.deepEqual(await repos().projects.list({ orgId: org.id }), []);
      assert.deepEqual((await repos().audit.list({ orgId: org.id }, { limit: 10 })).items, []);
    });

    test('a nested run that fails is undone alone when the outer run catches it', async () => {
      const org = await repos().orgs.create({ name: unique('org') });
      const kept = await repos().unitOfWork.run(async (tx) => {
        const outer = await tx.projects.create({ orgId: org.id }, { name: unique('outer') });
        await tx.unitOfWork
          .run(async (inner) => {
            await inner.projects.create({ orgId: org.id }, { name: unique('inner') });
            throw new Error('inner fails');
          })
          .catch(() => undefined);
        await tx.audit.append(draft(org.id, outer.id));
        return outer;
      });
      assert.deepEqual((await repos().projects.list({ orgId: org.id })).map((p) => p.id), [kept.id]);
    });
  });
}
