import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createInMemoryRepositories } from '@switchyard/core/testing';
import { ADDRESS_VERIFICATION_LIMIT, queueAddressVerification, type MailSettings } from '@switchyard/services';

// An org admin cannot turn account creation into a mail cannon: verification mails per org are
// bounded per window (docs/security.md "Email addresses belong to whoever proves control of them").

test('verification mails are limited per org; another org is unaffected; no mail at all when delivery is off', async () => {
  const repos = createInMemoryRepositories();
  const [orgA, orgB] = [await repos.orgs.create({ name: 'a' }), await repos.orgs.create({ name: 'b' })];
  const mail: MailSettings = { delivery: 'smtp', publicUrl: () => 'https://flags.example.test', onQueued: () => {} };
  const nowMs = Date.now();
  const queue = async (orgId: string, index: number, settings = mail) => {
    const user = await repos.users.create({ email: `u${orgId.slice(0, 4)}-${index}@example.com`, displayName: 'u', passwordHash: 'x' });
    return queueAddressVerification(repos, settings, { user, orgId, orgName: 'org', nowMs });
  };
  for (let i = 0; i < ADDRESS_VERIFICATION_LIMIT.perOrg; i += 1) assert.equal(await queue(orgA.id, i), true);
  assert.equal(await queue(orgA.id, 1_000), false, 'the next one is not mailed');
  assert.equal(await queue(orgB.id, 0), true, 'another org has its own budget');
  assert.equal((await repos.mailOutbox.listRecent(1_000)).length, ADDRESS_VERIFICATION_LIMIT.perOrg + 1);
  assert.equal(await queue(orgB.id, 1, { ...mail, delivery: 'off' }), false);
});
