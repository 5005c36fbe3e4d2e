import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import type { Repositories } from '../../ports/repositories.ts';
import { rejectsWithCode, unique } from './tenancy-contract-support.ts';

/** The ports of mail and address proof: the outbox, emailed tokens, org domains, and the users' proof-related calls. */
export type MailRepositories = Pick<Repositories, 'orgs' | 'users' | 'mailOutbox' | 'accountTokens' | 'orgDomains'>;

/** Builds the repositories a suite runs against (a fresh in-memory state, a fresh database). */
export type MakeMailRepositories = () => Promise<{ repos: MailRepositories; close(): Promise<void> }>;

const hash = (): string => createHash('sha256').update(randomBytes(32)).digest('hex');
const HOUR_MS = 3_600_000;

function suite(name: string, make: MakeMailRepositories, body: (repos: () => MailRepositories) => void): void {
  describe(name, () => {
    let current: { repos: MailRepositories; close(): Promise<void> } | undefined;
    const repos = () => {
      if (!current) throw new Error('the suite has not started');
      return current.repos;
    };
    test('setup', async () => {
      current = await make();
    });
    body(repos);
    test('teardown', async () => {
      await current?.close();
    });
  });
}

/** MailOutboxRepository: enqueue, claim under a lease (each mail to one claimer), finish, retry, fail, prune. */
export function mailOutboxRepositoryContract(make: MakeMailRepositories): void {
  suite('MailOutboxRepository contract', make, (repos) => {
    test('a claimed mail is not claimed again while its lease holds; after it, it is (attempts counted)', async () => {
      const now = Date.now() + 10 * HOUR_MS;
      const mail = await repos().mailOutbox.enqueue({ to: 'a@example.com', subject: 's', text: 'link', kind: 'password_reset' }, now);
      assert.equal(mail.status, 'pending');
      const [first, again] = await Promise.all([repos().mailOutbox.claimDue(now, 60_000, 10), repos().mailOutbox.claimDue(now, 60_000, 10)]);
      const claims = [...first!, ...again!].filter((m) => m.id === mail.id);
      assert.equal(claims.length, 1, 'one claimer');
      assert.equal(claims[0]!.status, 'sending');
      assert.equal(claims[0]!.attempts, 1);
      assert.deepEqual((await repos().mailOutbox.claimDue(now + 59_000, 60_000, 10)).filter((m) => m.id === mail.id), []);
      const reclaimed = (await repos().mailOutbox.claimDue(now + 61_000, 60_000, 10)).find((m) => m.id === mail.id);
      assert.equal(reclaimed?.attempts, 2);
      await repos().mailOutbox.finish(mail.id, 'sent', now + 62_000);
      const [sent] = (await repos().mailOutbox.listRecent(100)).filter((m) => m.id === mail.id);
      assert.equal(sent?.status, 'sent');
      assert.equal(sent?.text, '', 'a sent mail keeps no link');
    });

    test('retryLater waits until its time; fail is final; kept stays readable; pruning takes only finished old mails', async () => {
      const now = Date.now() + 20 * HOUR_MS;
      const retried = await repos().mailOutbox.enqueue({ to: 'r@example.com', subject: 's', text: 't', kind: 'invitation' }, now);
      const failed = await repos().mailOutbox.enqueue({ to: 'f@example.com', subject: 's', text: 't', kind: 'invitation' }, now);
      const kept = await repos().mailOutbox.enqueue({ to: 'k@example.com', subject: 's', text: 'the link', kind: 'verify_email' }, now);
      await repos().mailOutbox.claimDue(now, 60_000, 100);
      await repos().mailOutbox.retryLater(retried.id, now + 30_000, 'ECONNREFUSED');
      await repos().mailOutbox.fail(failed.id, 'gone', now);
      await repos().mailOutbox.finish(kept.id, 'kept', now);
      assert.deepEqual((await repos().mailOutbox.claimDue(now + 29_000, 60_000, 100)).map((m) => m.id).filter((id) => [retried.id, failed.id, kept.id].includes(id)), []);
      const due = (await repos().mailOutbox.claimDue(now + 30_000, 60_000, 100)).find((m) => m.id === retried.id);
      assert.equal(due?.lastError, 'ECONNREFUSED');
      const listed = await repos().mailOutbox.listRecent(100);
      assert.equal(listed.find((m) => m.id === kept.id)?.text, 'the link');
      assert.equal(listed.find((m) => m.id === failed.id)?.status, 'failed');
      const pruned = await repos().mailOutbox.pruneFinished(now + 1, 100);
      assert.ok(pruned >= 2);
      const left = (await repos().mailOutbox.listRecent(100)).map((m) => m.id);
      assert.ok(left.includes(retried.id) && !left.includes(failed.id) && !left.includes(kept.id), 'the mail still sending stays');
    });
  });
}

/** AccountTokenRepository: single use, per purpose, expiry, revocation, pruning. */
export function accountTokenRepositoryContract(make: MakeMailRepositories): void {
  suite('AccountTokenRepository contract', make, (repos) => {
    test('a token is spent once, only for its purpose and before its expiry; revokeAll voids the rest', async () => {
      const now = Date.now();
      const user = await repos().users.create({ email: `${unique('tok')}@example.com`, displayName: 't', passwordHash: 'x' });
      const [a, b, expired] = [hash(), hash(), hash()];
      await repos().accountTokens.create({ tokenHash: a, purpose: 'password_reset', userId: user.id, email: user.email, expiresAtMs: now + HOUR_MS }, now);
      await repos().accountTokens.create({ tokenHash: b, purpose: 'password_reset', userId: user.id, email: user.email, expiresAtMs: now + HOUR_MS }, now);
      await repos().accountTokens.create({ tokenHash: expired, purpose: 'verify_email', userId: user.id, email: user.email, expiresAtMs: now + 10 }, now);
      assert.equal(await repos().accountTokens.consume(a, 'verify_email', now), null, 'another purpose');
      const results = await Promise.all([repos().accountTokens.consume(a, 'password_reset', now), repos().accountTokens.consume(a, 'password_reset', now)]);
      assert.equal(results.filter((r) => r !== null).length, 1, 'spent once');
      assert.equal(results.find((r) => r !== null)?.userId, user.id);
      assert.equal(await repos().accountTokens.consume(expired, 'verify_email', now + 10), null, 'expired');
      assert.equal(await repos().accountTokens.revokeAll(user.id, 'password_reset', now), 1);
      assert.equal(await repos().accountTokens.consume(b, 'password_reset', now), null, 'revoked');
      assert.ok((await repos().accountTokens.pruneExpired(now + 10, 100)) >= 1);
    });
  });
}

/** UserRepository's proof-related calls and OrgDomainRepository. */
export function addressProofRepositoriesContract(make: MakeMailRepositories): void {
  suite('address proof contract (users, org domains)', make, (repos) => {
    test('markEmailVerified keeps the first time; releaseMemberships ignores the last-admin rule; deleteIfOrgless only when orgless', async () => {
      const [orgA, orgB] = [await repos().orgs.create({ name: unique('a') }), await repos().orgs.create({ name: unique('b') })];
      const user = await repos().users.create({ email: `${unique('claim')}@example.com`, displayName: 'c', passwordHash: 'x' });
      assert.equal(user.emailVerifiedAtMs, null);
      await repos().users.addMembership({ orgId: orgA.id, userId: user.id, role: 'org_admin' });
      await repos().users.addMembership({ orgId: orgB.id, userId: user.id, role: 'org_member' });
      await repos().users.markEmailVerified(user.id, 1_000);
      await repos().users.markEmailVerified(user.id, 2_000);
      assert.equal((await repos().users.getById(user.id))?.emailVerifiedAtMs, 1_000);
      assert.equal(await repos().users.deleteIfOrgless(user.id), false);
      const released = await repos().users.releaseMemberships(user.id, [orgB.id]);
      assert.deepEqual(released.map((m) => m.orgId), [orgA.id], 'the last org_admin of A goes too');
      assert.deepEqual((await repos().users.listMemberships(user.id)).map((m) => m.orgId), [orgB.id]);
      await repos().users.releaseMemberships(user.id, []);
      assert.equal(await repos().users.deleteIfOrgless(user.id), true);
      assert.equal(await repos().users.getById(user.id), null);
      const verified = await repos().users.create({ email: `${unique('v')}@example.com`, displayName: 'v', passwordHash: 'x', emailVerifiedAtMs: 5 });
      assert.equal(verified.emailVerifiedAtMs, 5);
    });

    test('a domain is added once per org, verified for one org at a time, and removed', async () => {
      const [orgA, orgB] = [await repos().orgs.create({ name: unique('da') }), await repos().orgs.create({ name: unique('db') })];
      const domain = `${unique('d')}.example`;
      await repos().orgDomains.add({ orgId: orgA.id }, { domain, challenge: 'ca' }, 1);
      await rejectsWithCode(repos().orgDomains.add({ orgId: orgA.id }, { domain, challenge: 'again' }, 1), 'ALREADY_EXISTS');
      await repos().orgDomains.add({ orgId: orgB.id }, { domain, challenge: 'cb' }, 1);
      assert.equal(await repos().orgDomains.isVerified({ orgId: orgA.id }, domain), false);
      assert.equal((await repos().orgDomains.markVerified({ orgId: orgA.id }, domain, 7)).verifiedAtMs, 7);
      assert.equal(await repos().orgDomains.isVerified({ orgId: orgA.id }, domain), true);
      await rejectsWithCode(repos().orgDomains.markVerified({ orgId: orgB.id }, domain, 8), 'ALREADY_EXISTS');
      assert.equal(await repos().orgDomains.isVerified({ orgId: orgB.id }, domain), false);
      await rejectsWithCode(repos().orgDomains.markVerified({ orgId: orgB.id }, `other-${domain}`, 8), 'NOT_FOUND');
      assert.deepEqual((await repos().orgDomains.list({ orgId: orgA.id })).map((d) => d.domain), [domain]);
      await repos().orgDomains.remove({ orgId: orgA.id }, domain);
      await rejectsWithCode(repos().orgDomains.remove({ orgId: orgA.id }, domain), 'NOT_FOUND');
      assert.equal((await repos().orgDomains.markVerified({ orgId: orgB.id }, domain, 9)).verifiedAtMs, 9, 'free once A removed it');
    });
  });
}
