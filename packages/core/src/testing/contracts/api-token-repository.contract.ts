import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { assertRecentMs, MALFORMED_ID, rejectsWithCode, unique, UNKNOWN_ID, useRepositories, type MakeTenancyRepositories } from './tenancy-contract-support.ts';

const input = (hash: string, overrides: Record<string, unknown> = {}) => ({
  name: 'deploy bot',
  role: 'editor' as const,
  scope: { projectIds: ['p-1'], environmentIds: ['e-1', 'e-2'] },
  tokenPrefix: 'swy_abcd',
  tokenHash: hash,
  createdByUserId: null,
  expiresAtMs: null,
  ...overrides,
});

/** The behaviour every ApiTokenRepository must show, tenant isolation included. */
export function apiTokenRepositoryContract(name: string, makeRepos: MakeTenancyRepositories): void {
  describe(`ApiTokenRepository contract: ${name}`, () => {
    const repos = useRepositories(makeRepos);

    test('create then findActiveByHash, get and list give every field back; the hash is never part of the record', async () => {
      const org = await repos().orgs.create({ name: unique('org') });
      const user = await repos().users.create({ email: `${unique('u')}@example.com`, displayName: 'u', passwordHash: 'x' });
      const expiresAtMs = Date.now() + 3_600_000;
      const token = await repos().apiTokens.create({ orgId: org.id }, input('hash-1', { createdByUserId: user.id, expiresAtMs }));
      assert.equal(token.orgId, org.id);
      assert.equal(token.name, 'deploy bot');
      assert.equal(token.role, 'editor');
      assert.deepEqual(token.scope, { projectIds: ['p-1'], environmentIds: ['e-1', 'e-2'] });
      assert.equal(token.tokenPrefix, 'swy_abcd');
      assert.equal(token.createdByUserId, user.id);
      assert.equal(token.expiresAtMs, expiresAtMs);
      assert.equal(token.revokedAtMs, null);
      assert.equal(token.lastUsedAtMs, null);
      assertRecentMs(token.createdAtMs);
      assert.equal('tokenHash' in token, false);
      assert.deepEqual(await repos().apiTokens.findActiveByHash('hash-1'), token);
      assert.deepEqual(await repos().apiTokens.get({ orgId: org.id }, token.id), token);
      assert.deepEqual(await repos().apiTokens.list({ orgId: org.id }), [token]);
      const wholeOrg = await repos().apiTokens.create({ orgId: org.id }, input('hash-2', { scope: {} }));
      assert.deepEqual(wholeOrg.scope, {});
      assert.deepEqual((await repos().apiTokens.list({ orgId: org.id })).map((t) => t.id), [token.id, wholeOrg.id]);
    });

    test("another org's token is absent from get, list and revoke; unknown and malformed ids are NOT_FOUND", async () => {
      const victim = await repos().orgs.create({ name: unique('victim') });
      const attacker = await repos().orgs.create({ name: unique('attacker') });
      const token = await repos().apiTokens.create({ orgId: victim.id }, input('hash-v'));
      assert.equal(await repos().apiTokens.get({ orgId: attacker.id }, token.id), null);
      assert.deepEqual(await repos().apiTokens.list({ orgId: attacker.id }), []);
      await rejectsWithCode(repos().apiTokens.revoke({ orgId: attacker.id }, token.id, Date.now()), 'NOT_FOUND');
      await rejectsWithCode(repos().apiTokens.revoke({ orgId: victim.id }, UNKNOWN_ID, Date.now()), 'NOT_FOUND');
      await rejectsWithCode(repos().apiTokens.revoke({ orgId: victim.id }, MALFORMED_ID, Date.now()), 'NOT_FOUND');
      assert.equal(await repos().apiTokens.get({ orgId: victim.id }, MALFORMED_ID), null);
      assert.notEqual(await repos().apiTokens.findActiveByHash('hash-v'), null, 'the refused revocations changed nothing');
    });

    test('a revoked token is found by no hash and listed nowhere; revoking it again is NOT_FOUND', async () => {
      const org = await repos().orgs.create({ name: unique('org') });
      const token = await repos().apiTokens.create({ orgId: org.id }, input('hash-r'));
      const nowMs = Date.now();
      const revoked = await repos().apiTokens.revoke({ orgId: org.id }, token.id, nowMs);
      assert.equal(revoked.revokedAtMs, nowMs);
      assert.equal(await repos().apiTokens.findActiveByHash('hash-r'), null);
      assert.deepEqual(await repos().apiTokens.list({ orgId: org.id }), []);
      await rejectsWithCode(repos().apiTokens.revoke({ orgId: org.id }, token.id, nowMs), 'NOT_FOUND');
    });

    test('pruneEnded deletes tokens revoked or expired before the cut-off, in batches; live ones and recently ended ones stay', async () => {
      const org = await repos().orgs.create({ name: unique('org') });
      const nowMs = Date.now();
      const live = await repos().apiTokens.create({ orgId: org.id }, input('hash-p1'));
      const expiring = await repos().apiTokens.create({ orgId: org.id }, input('hash-p2', { expiresAtMs: nowMs + 60_000 }));
      const revokedEarly = await repos().apiTokens.create({ orgId: org.id }, input('hash-p3'));
      const revokedLate = await repos().apiTokens.create({ orgId: org.id }, input('hash-p4'));
      await repos().apiTokens.revoke({ orgId: org.id }, revokedEarly.id, nowMs - 3_600_000);
      await repos().apiTokens.revoke({ orgId: org.id }, revokedLate.id, nowMs + 10_000);
      // By hand: the cut-off an half hour ago is after the early revocation (an hour ago) only; the
      // store's other tokens (earlier tests) were revoked after it. nowMs + 120 s is after the
      // expiry (+60 s) and the late revocation (+10 s) too.
      assert.equal(await repos().apiTokens.pruneEnded(nowMs - 1_800_000, 10), 1);
      assert.equal(await repos().apiTokens.get({ orgId: org.id }, revokedEarly.id), null);
      assert.equal(await repos().apiTokens.pruneEnded(nowMs + 120_000, 1), 1, 'a batch is at most the limit');
      while ((await repos().apiTokens.pruneEnded(nowMs + 120_000, 10)) > 0);
      assert.equal(await repos().apiTokens.get({ orgId: org.id }, expiring.id), null);
      assert.equal(await repos().apiTokens.get({ orgId: org.id }, revokedLate.id), null);
      assert.notEqual(await repos().apiTokens.get({ orgId: org.id }, live.id), null, 'a token without end stays');
      assert.equal(await repos().apiTokens.pruneEnded(nowMs + 120_000, 0), 0);
    });

    test('recordUses sets the last use once per interval, never on a revoked token, and ignores malformed ids', async () => {
      const org = await repos().orgs.create({ name: unique('org') });
      const used = await repos().apiTokens.create({ orgId: org.id }, input('hash-u1'));
      const revoked = await repos().apiTokens.create({ orgId: org.id }, input('hash-u2'));
      await repos().apiTokens.revoke({ orgId: org.id }, revoked.id, Date.now());
      assert.equal(await repos().apiTokens.recordUses([used.id, revoked.id, MALFORMED_ID], 60_000), 1);
      const first = (await repos().apiTokens.get({ orgId: org.id }, used.id))!.lastUsedAtMs;
      assert.notEqual(first, null);
      assertRecentMs(first!);
      assert.equal(await repos().apiTokens.recordUses([used.id], 60_000), 0, 'within the interval: unchanged');
      assert.equal((await repos().apiTokens.get({ orgId: org.id }, revoked.id))!.lastUsedAtMs, null);
      assert.equal(await repos().apiTokens.recordUses([], 60_000), 0);
    });
  });
}
