import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { describe, test } from 'node:test';
import { api, expectError, expectStatus, loginAdmin, seedTenant } from './support/rest-client.ts';
import { startSmtpInbox } from './support/smtp-inbox.ts';
import type { OutboxMail } from '@switchyard/core';
import { startTestServer, type TestServer } from './support/test-server.ts';

// How mail leaves the platform in each configuration (docs/security.md "Email delivery"): the
// request that queues a mail never waits for delivery; without SMTP_URL development keeps a local
// outbox for system administrators; production without it says so and refuses what needs a mail.

/**
 * An SMTP server that cannot be talked to: a loopback port whose every connection is closed at
 * once. It stays bound while the test runs. (A port bound and then closed could be taken by
 * another test's server in the meantime, and the mail worker would then wait out nodemailer's
 * 30-second greeting timeout on each attempt: 187 s for this file in one run.)
 */
async function deadSmtpServer(): Promise<{ port: number; close: () => Promise<void> }> {
  const server = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return { port, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/**
 * The newest outbox mail once no worker holds it and it was tried `attempts` times: the worker
 * also runs by itself (woken when a mail is queued), so a test waits for its pass to end.
 */
async function settledMail(ts: TestServer, attempts: number): Promise<OutboxMail> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const [mail] = await ts.server.repos.mailOutbox.listRecent(1);
    if (mail && mail.status !== 'sending' && mail.attempts >= attempts) return mail;
    if (Date.now() > deadline) assert.fail(`the mail did not settle: ${JSON.stringify(mail)}`);
    await ts.server.mailWorker.runOnce();
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('email delivery', () => {
  test('an unreachable SMTP server neither blocks nor fails the request; the mail is retried with a doubling wait', async () => {
    const smtp = await deadSmtpServer();
    const ts = await startTestServer({ SMTP_URL: `smtp://127.0.0.1:${smtp.port}` });
    try {
      const client = api(ts.base);
      const root = await loginAdmin(client);
      const tenant = await seedTenant(client, root.token, 'smtp-down');
      expectStatus(await client.post('/v1/auth/password-reset', { body: { email: tenant.member.email } }), 202);
      const mail = await settledMail(ts, 1);
      assert.equal(mail?.status, 'pending', 'back in the queue for another attempt');
      assert.equal(mail?.attempts, 1);
      assert.match(mail!.lastError, /socket close|ECONNRESET/i, "the transport's error is kept");
      const firstWait = mail!.nextAttemptAtMs - Date.now();
      assert.ok(firstWait > 20_000 && firstWait <= 30_000, `the first retry waits 30 s (${firstWait} ms)`);
      // Not due yet: a pass now does not touch it.
      assert.deepEqual(await ts.server.mailWorker.runOnce(), { sent: 0, kept: 0, retried: 0, failed: 0 });

      // The server comes back; once due, the mail goes out.
      const inbox = await startSmtpInbox();
      try {
        await ts.db.sql`UPDATE mail_outbox SET next_attempt_at_ms = 0`;
        // The worker's sender points at the old port: a second failure doubles the wait.
        const again = await settledMail(ts, 2);
        assert.equal(again?.attempts, 2);
        const secondWait = again!.nextAttemptAtMs - Date.now();
        assert.ok(secondWait > 50_000 && secondWait <= 60_000, `the second retry waits 60 s (${secondWait} ms)`);
      } finally {
        await inbox.close();
      }
    } finally {
      await ts.stop();
      await smtp.close();
    }
  });

  test('after the last attempt a mail is given up (failed, its body blanked)', async () => {
    const smtp = await deadSmtpServer();
    const ts = await startTestServer({ SMTP_URL: `smtp://127.0.0.1:${smtp.port}` });
    try {
      const client = api(ts.base);
      const root = await loginAdmin(client);
      const tenant = await seedTenant(client, root.token, 'smtp-gone');
      expectStatus(await client.post('/v1/auth/password-reset', { body: { email: tenant.member.email } }), 202);
      for (let attempt = 1; attempt <= 6; attempt += 1) {
        await settledMail(ts, attempt);
        await ts.db.sql`UPDATE mail_outbox SET next_attempt_at_ms = 0 WHERE status = 'pending'`;
      }
      const mail = await settledMail(ts, 6);
      assert.equal(mail?.status, 'failed');
      assert.equal(mail?.attempts, 6);
      assert.equal(mail?.text, '');
      await ts.db.sql`UPDATE mail_outbox SET next_attempt_at_ms = 0`;
      assert.deepEqual(await ts.server.mailWorker.runOnce(), { sent: 0, kept: 0, retried: 0, failed: 0 }, 'never tried again');
    } finally {
      await ts.stop();
      await smtp.close();
    }
  });

  test('development without SMTP_URL: mails are kept in a local outbox that only system administrators read, and the log names it', async () => {
    const ts = await startTestServer({ APP_ENV: 'development', PUBLIC_URL: 'http://localhost:8080' });
    try {
      const client = api(ts.base);
      const root = await loginAdmin(client);
      const tenant = await seedTenant(client, root.token, 'dev-outbox');
      expectStatus(await client.post('/v1/auth/password-reset', { body: { email: tenant.member.email } }), 202);
      await settledMail(ts, 1);
      const outbox = expectStatus(await client.get('/v1/admin/mail-outbox', { token: root.token }), 200);
      const mail = outbox.mails.find((m: { to: string }) => m.to === tenant.member.email);
      assert.equal(mail?.status, 'kept');
      assert.equal(mail?.kind, 'password_reset');
      const token = /#\/reset-password\/([A-Za-z0-9_-]+)/.exec(mail.text)?.[1];
      assert.ok(token, 'the link is in the kept mail');
      expectStatus(await client.post('/v1/auth/password-reset/confirm', { body: { token, new_password: 'from-the-outbox-1', keep_org_ids: [tenant.orgId] } }), 200);
      expectError(await client.get('/v1/admin/mail-outbox', { token: tenant.admin.token }), 403, 'PERMISSION_DENIED');
      expectError(await client.get('/v1/admin/mail-outbox'), 401, 'UNAUTHENTICATED');
      assert.ok(ts.logs.some((line) => line.includes('/v1/admin/mail-outbox') && line.includes('kept in the local outbox')), 'the log names the outbox');
    } finally {
      await ts.stop();
    }
  });

  test('production without SMTP_URL: said at start; password reset refused (409), nothing queued; no local outbox', async () => {
    const ts = await startTestServer({ APP_ENV: 'production' });
    try {
      assert.ok(ts.logs.some((line) => line.includes('APP_ENV=production without SMTP_URL') && line.includes('password reset is unavailable')), 'the start says what is unavailable');
      const client = api(ts.base);
      const root = await loginAdmin(client);
      const tenant = await seedTenant(client, root.token, 'prod');
      expectError(await client.post('/v1/auth/password-reset', { body: { email: tenant.member.email } }), 409, 'FAILED_PRECONDITION', /SMTP_URL/);
      assert.deepEqual(await ts.server.repos.mailOutbox.listRecent(10), []);
      expectError(await client.get('/v1/admin/mail-outbox', { token: root.token }), 409, 'FAILED_PRECONDITION');
    } finally {
      await ts.stop();
    }
  });
});
