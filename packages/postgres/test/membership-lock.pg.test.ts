import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Repositories } from '@switchyard/core';
import { createPostgresRepositories } from '../src/repositories.ts';
import { createTestDatabase, type TestDatabase } from '../src/testing/test-database.ts';

// lockMembership against a concurrent removal (docs/security.md "Removed and demoted admins"): an
// admin's write that locks its membership first makes the removal wait for it (so the removal's
// withdrawal sees what it wrote); a removal that came first makes the write see no membership.

let db: TestDatabase;
let repos: Repositories;
before(async () => {
  db = await createTestDatabase();
  repos = createPostgresRepositories(db.sql);
});
after(async () => {
  await db?.drop();
});

/** An org with three admins (so two may be removed or demoted). */
async function orgWithAdmins(): Promise<{ orgId: string; first: string; second: string }> {
  const org = await repos.orgs.create({ name: `lock-${Math.random()}` });
  const ids: string[] = [];
  for (const label of ['first', 'second', 'third']) {
    const user = await repos.users.create({ email: `${label}-${Math.random()}@example.com`, displayName: label, passwordHash: 'x' });
    await repos.users.addMembership({ orgId: org.id, userId: user.id, role: 'org_admin' });
    ids.push(user.id);
  }
  return { orgId: org.id, first: ids[0]!, second: ids[1]! };
}

/** A promise and the function that resolves it. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

/** Whether the promise settles within `ms`. */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let settled = false;
  void promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  await new Promise((resolve) => setTimeout(resolve, ms));
  return settled;
}

test('a removal waits for a unit of work that locked the membership, and then commits', async () => {
  const { orgId, first } = await orgWithAdmins();
  const release = gate();
  const locked = gate();
  const writing = repos.unitOfWork.run(async (tx) => {
    assert.equal((await tx.users.lockMembership(orgId, first))?.role, 'org_admin');
    locked.open();
    await release.opened;
  });
  await locked.opened;
  const removal = repos.users.removeMembership({ orgId }, first);
  assert.equal(await settlesWithin(removal, 300), false, 'the removal waits for the write');
  release.open();
  await writing;
  await removal;
  assert.equal(await repos.users.getMembership(orgId, first), null);
});

test('a write that locks after a removal committed sees no membership; after a demotion, the new role', async () => {
  const { orgId, first, second } = await orgWithAdmins();
  const release = gate();
  const removed = gate();
  const removing = repos.unitOfWork.run(async (tx) => {
    await tx.users.removeMembership({ orgId }, first);
    removed.open();
    await release.opened;
  });
  await removed.opened;
  const reading = repos.unitOfWork.run((tx) => tx.users.lockMembership(orgId, first));
  assert.equal(await settlesWithin(reading, 300), false, 'the lock waits for the removal');
  release.open();
  await removing;
  assert.equal(await reading, null, 'and then finds the membership gone');

  await repos.users.setMembershipRole({ orgId }, second, 'org_member');
  assert.equal((await repos.users.lockMembership(orgId, second))?.role, 'org_member');
});
