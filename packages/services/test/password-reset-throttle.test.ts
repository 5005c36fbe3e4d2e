import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createInMemoryRepositories, InMemoryChangeNotifier } from '@switchyard/core/testing';
import { PASSWORD_RESET_LIMITS, PasswordResetService } from '../src/accounts/password-reset-service.ts';
import type { MailSettings } from '../src/mail/mail-settings.ts';

// Reset requests are limited per client as logins are (docs/security.md "Password reset"): an IPv6
// client is its /64 and a site its /48, so rotating addresses inside them buys nothing.

const mail: MailSettings = { delivery: 'local-outbox', publicUrl: () => 'https://flags.example.com', onQueued: () => {} };
const service = () => new PasswordResetService(createInMemoryRepositories(), { hash: async () => 'h', verify: async () => false }, new InMemoryChangeNotifier(), mail);

async function refusals(reset: PasswordResetService, count: number, address: (i: number) => string): Promise<number> {
  let refused = 0;
  for (let i = 0; i < count; i++) {
    try {
      // A different email each time: only the client's limits can refuse.
      await reset.requestPasswordReset({ email: `nobody${i}@example.com`, clientAddress: address(i) });
    } catch (error) {
      if ((error as { code?: string }).code !== 'RESOURCE_EXHAUSTED') throw error;
      refused++;
    }
  }
  return refused;
}

test('rotating addresses inside one IPv6 /64 is one client: refused past its limit', async () => {
  const limit = PASSWORD_RESET_LIMITS.perClientAddress;
  assert.equal(await refusals(service(), limit + 10, (i) => `2001:db8:1:2::${(i + 1).toString(16)}`), 10);
});

test('rotating /64s inside one /48 is one site: refused past its limit', async () => {
  const limit = PASSWORD_RESET_LIMITS.perSite;
  assert.equal(await refusals(service(), limit + 5, (i) => `2001:db8:1:${(i + 1).toString(16)}::1`), 5);
});

test('IPv4 clients are still counted per address', async () => {
  const reset = service();
  assert.equal(await refusals(reset, PASSWORD_RESET_LIMITS.perClientAddress, (i) => `192.0.2.${i + 1}`), 0);
});
