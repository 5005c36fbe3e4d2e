import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Registry } from 'prom-client';
import { SERVER_KEY_SETTINGS, isDomainError, type Principal } from '@switchyard/core';
import { PrometheusClientMetrics } from '../src/domains/client/client-metrics.ts';
import { ClientAccess } from '../src/domains/client/rest-client-access.ts';

// The origin rules of docs/client-side.md "CORS and origins" on hand-made requests: what the
// integration tests cannot reach deterministically (the log's hourly rhythm, with a clock).

const request = (headers: Record<string, string>, host = 'flags.internal:8080', protocol: 'http' | 'https' = 'http') =>
  ({ headers, host, protocol, routeOptions: { url: '/ofrep/v1/evaluate/flags' } }) as unknown as FastifyRequest;

function reply(): FastifyReply & { sent: Record<string, string> } {
  const sent: Record<string, string> = {};
  const fake = {
    sent,
    header(name: string, value: string) {
      sent[name.toLowerCase()] = value;
      return fake;
    },
  };
  return fake as unknown as FastifyReply & { sent: Record<string, string> };
}

const serverKey = (id: string): Principal => ({ kind: 'sdk_key', sdkKeyId: id, orgId: 'o', projectId: 'p', environmentId: 'e' });
const clientKey = (origins: string[], allowMissingOrigin = false): Principal => ({
  kind: 'client_key',
  sdkKeyId: 'ck-1',
  orgId: 'o',
  projectId: 'p',
  environmentId: 'e',
  client: { ...SERVER_KEY_SETTINGS, name: 'web', allowedOrigins: origins, allowMissingOrigin },
});

const refused = (run: () => void) =>
  assert.throws(run, (error: unknown) => isDomainError(error) && error.code === 'PERMISSION_DENIED');

function setup(publicUrl: string | null = 'https://flags.example.com') {
  const lines: Array<Record<string, unknown>> = [];
  const clock = { now: 1_000_000 };
  const registry = new Registry();
  const access = new ClientAccess({
    origins: { allows: (origin) => origin === 'https://app.example.com' },
    publicUrl: () => publicUrl,
    metrics: new PrometheusClientMetrics(registry),
    log: { warn: (fields) => lines.push(fields) },
    now: () => clock.now,
  });
  return { access, lines, clock, registry };
}

describe('a server key from a browser', () => {
  test('is refused, counted each time, and logged once per key per hour', async () => {
    const { access, lines, clock, registry } = setup();
    const browser = request({ origin: 'https://evil.example.net' });
    for (let i = 0; i < 5; i++) refused(() => access.refuseServerKeyFromBrowser(browser, serverKey('key-a')));
    refused(() => access.refuseServerKeyFromBrowser(browser, serverKey('key-b')));
    assert.deepEqual(lines.map((line) => line.sdk_key_id), ['key-a', 'key-b'], 'one line per key');
    clock.now += 59 * 60_000;
    refused(() => access.refuseServerKeyFromBrowser(browser, serverKey('key-a')));
    assert.equal(lines.length, 2, 'still quiet within the hour');
    clock.now += 60_000;
    refused(() => access.refuseServerKeyFromBrowser(browser, serverKey('key-a')));
    assert.equal(lines.length, 3, 'an hour later, one more line');
    const metrics = await registry.getSingleMetricAsString('switchyard_sdk_key_origin_refusals_total');
    assert.match(metrics, /switchyard_sdk_key_origin_refusals_total\{kind="server",reason="server_key_in_browser"\} 8$/m);
  });

  test('a flood of distinct keys keeps logging within the bound (the memory starts over, it never grows past it)', () => {
    const { access, lines } = setup();
    const browser = request({ origin: 'https://evil.example.net' });
    for (let i = 0; i < 25_000; i++) refused(() => access.refuseServerKeyFromBrowser(browser, serverKey(`k${i}`)));
    assert.equal(lines.length, 25_000, 'every new key is reported once');
    assert.ok((access as unknown as { loggedAt: Map<string, number> }).loggedAt.size <= 10_000, 'at most 10,000 keys remembered');
  });

  test('the server’s own origins are exempt: PUBLIC_URL’s and the request’s own host', () => {
    const { access, lines } = setup();
    access.refuseServerKeyFromBrowser(request({ origin: 'https://flags.example.com' }), serverKey('k'));
    access.refuseServerKeyFromBrowser(request({ origin: 'http://flags.internal:8080' }), serverKey('k'));
    access.refuseServerKeyFromBrowser(request({ origin: 'https://flags.internal' }, 'flags.internal', 'https'), serverKey('k'));
    // No Origin: a server, an SDK, curl.
    access.refuseServerKeyFromBrowser(request({}), serverKey('k'));
    assert.equal(lines.length, 0);
    // A look-alike of either is a browser elsewhere.
    refused(() => access.refuseServerKeyFromBrowser(request({ origin: 'https://flags.example.com.evil.net' }), serverKey('k')));
    refused(() => access.refuseServerKeyFromBrowser(request({ origin: 'https://flags.internal:8080' }), serverKey('k')));
    refused(() => access.refuseServerKeyFromBrowser(request({ origin: 'null' }), serverKey('k')));
  });

  test('without PUBLIC_URL only the request’s own host is exempt', () => {
    const { access } = setup(null);
    refused(() => access.refuseServerKeyFromBrowser(request({ origin: 'https://flags.example.com' }), serverKey('k')));
    access.refuseServerKeyFromBrowser(request({ origin: 'http://flags.internal:8080' }), serverKey('k'));
  });

  test('the refusal is readable by the page only when its origin passes preflights anyway', () => {
    const { access } = setup();
    const readable = reply();
    refused(() => access.admit(request({ origin: 'https://app.example.com' }), readable, serverKey('k')));
    assert.equal(readable.sent['access-control-allow-origin'], 'https://app.example.com');
    const unreadable = reply();
    refused(() => access.admit(request({ origin: 'https://evil.example.net' }), unreadable, serverKey('k')));
    assert.equal(unreadable.sent['access-control-allow-origin'], undefined);
  });
});

describe('a client key', () => {
  test('from one of its origins: admitted with the CORS answer headers; never credentials', () => {
    const { access } = setup();
    const answer = reply();
    access.admit(request({ origin: 'https://eu.shop.example.com' }), answer, clientKey(['https://*.shop.example.com']));
    assert.deepEqual(answer.sent, {
      vary: 'Origin',
      'access-control-allow-origin': 'https://eu.shop.example.com',
      'access-control-expose-headers': 'ETag, Retry-After',
    });
  });

  test('from another origin, or none without allow_missing_origin: refused, with no CORS header', () => {
    const { access } = setup();
    const variants: Array<Record<string, string>> = [{ origin: 'https://app.example.com' }, { origin: 'https://shop.example.com' }, {}];
    for (const headers of variants) {
      const answer = reply();
      refused(() => access.admit(request(headers), answer, clientKey(['https://*.shop.example.com'])));
      assert.equal(answer.sent['access-control-allow-origin'], undefined);
    }
    const native = reply();
    access.admit(request({}), native, clientKey([], true));
    assert.equal(native.sent['access-control-allow-origin'], undefined);
  });

  test('a user’s token (the console, same origin) is left alone', () => {
    const { access } = setup();
    const answer = reply();
    access.admit(request({ origin: 'https://evil.example.net' }), answer, { kind: 'user', userId: 'u', orgId: 'o', role: 'org_admin', isSystem: false });
    assert.deepEqual(answer.sent, {});
  });
});
