import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '@switchyard/transport/config.ts';

// SMTP_URL, SMTP_FROM and DNS_SERVERS (docs/security.md "Email delivery", "Domains an org proved").

test('mail settings: defaults (no SMTP, switchyard@localhost, the system resolvers) and overrides', () => {
  assert.deepEqual(loadConfig({}).mail, { smtpUrl: null, from: 'switchyard@localhost', dnsServers: null });
  const mail = loadConfig({ SMTP_URL: 'smtps://user:pw@mail.example.com:465', SMTP_FROM: 'Switchyard <flags@example.com>', DNS_SERVERS: '10.0.0.2, 127.0.0.1:5353,[::1]:53,::1' }).mail;
  assert.deepEqual(mail, { smtpUrl: 'smtps://user:pw@mail.example.com:465', from: 'Switchyard <flags@example.com>', dnsServers: ['10.0.0.2', '127.0.0.1:5353', '[::1]:53', '::1'] });
  assert.equal(loadConfig({ SMTP_FROM: 'flags@example.com' }).mail.from, 'flags@example.com');
});

test('mail settings: a bad value stops the start with one clear line', () => {
  for (const [env, message] of [
    [{ SMTP_URL: 'not a url' }, /SMTP_URL is not a valid URL/],
    [{ SMTP_URL: 'https://mail.example.com' }, /SMTP_URL must start with smtp:\/\/ or smtps:\/\//],
    [{ SMTP_FROM: 'nobody' }, /SMTP_FROM must be an email address/],
    [{ SMTP_FROM: 'a@b.example\r\nBcc: x@y.example' }, /SMTP_FROM must be an email address/],
    [{ DNS_SERVERS: 'dns.example.com' }, /DNS_SERVERS must list IP addresses/],
    [{ DNS_SERVERS: '10.0.0.1:70000' }, /DNS_SERVERS must list IP addresses/],
  ] as const) {
    assert.throws(() => loadConfig(env), (error: unknown) => error instanceof ConfigError && message.test(error.message), JSON.stringify(env));
  }
});
