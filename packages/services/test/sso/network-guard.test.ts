import assert from 'node:assert/strict';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { isDomainError, type ErrorCode } from '@switchyard/core';
import { checkProviderUrl, createGuardedFetch, isNonPublicAddress } from '../../src/sso/network-guard.ts';

async function rejectsWith(promise: Promise<unknown>, code: ErrorCode, message: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(isDomainError(error), `a DomainError, got ${String(error)}`);
    assert.equal(error.code, code);
    assert.match(error.message, message);
    return true;
  });
}

describe('isNonPublicAddress', () => {
  const nonPublic = [
    '127.0.0.1',
    '127.255.0.9',
    '10.0.0.1',
    '10.255.255.255',
    '172.16.0.1',
    '172.31.255.254',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '::',
    '::1',
    'fe80::1',
    'fe80::1%eth0',
    'fc00::1',
    'fd12:3456::1',
    'ff02::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:169.254.169.254',
    // IPv4-mapped in other notations: expanded, leading zeros, upper case, hex.
    '0:0:0:0:0:ffff:127.0.0.1',
    '0000:0000:0000:0000:0000:ffff:7f00:0001',
    '::FFFF:7F00:1',
    '::ffff:0a00:0001', // 10.0.0.1
    // IPv4-translated (::ffff:0:0:0/96), which the guard used to take for public IPv6.
    '::ffff:0:127.0.0.1',
    '::ffff:0:7f00:1',
    '0:0:0:0:ffff:0:a9fe:a9fe', // 169.254.169.254
    '::FFFF:0:10.0.0.1',
    '64:ff9b::a9fe:a9fe', // NAT64 of 169.254.169.254
    '2002:c0a8:0101::1', // 6to4 of 192.168.1.1
    'not an address',
  ];
  for (const ip of nonPublic) {
    test(`${ip} is not public`, () => assert.equal(isNonPublicAddress(ip), true));
  }
  for (const ip of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '2606:4700::1111', '::ffff:8.8.8.8', '::ffff:0:8.8.8.8', '2001:4860:4860::8888']) {
    test(`${ip} is public`, () => assert.equal(isNonPublicAddress(ip), false));
  }
});

describe('checkProviderUrl', () => {
  const strict = { allowPrivateNetworks: false };
  const relaxed = { allowPrivateNetworks: true };

  test('http is refused unless private networks are allowed', async () => {
    await rejectsWith(checkProviderUrl('http://8.8.8.8/', 'issuer_url', strict), 'INVALID_ARGUMENT', /issuer_url must be an https:\/\/ URL/);
    const url = await checkProviderUrl('http://127.0.0.1:8080/realms/a', 'issuer_url', relaxed);
    assert.equal(url.href, 'http://127.0.0.1:8080/realms/a');
  });

  test('other schemes are refused even when private networks are allowed', async () => {
    await rejectsWith(checkProviderUrl('file:///etc/passwd', 'issuer_url', relaxed), 'INVALID_ARGUMENT', /must be an https/);
    await rejectsWith(checkProviderUrl('not a url', 'metadata_url', relaxed), 'INVALID_ARGUMENT', /metadata_url is not a valid URL/);
  });

  test('a literal loopback, private or metadata address is refused without DNS', async () => {
    for (const raw of ['https://127.0.0.1/', 'https://10.0.0.8/', 'https://169.254.169.254/latest/meta-data/', 'https://[::1]/', 'https://[::ffff:7f00:1]/', 'https://[::ffff:0:127.0.0.1]/']) {
      await rejectsWith(
        checkProviderUrl(raw, 'issuer_url', strict),
        'INVALID_ARGUMENT',
        /^issuer_url resolves to a private or loopback address; set SSO_ALLOW_PRIVATE_NETWORKS=true to allow it$/,
      );
    }
  });

  test('a name that resolves to loopback is refused', async () => {
    await rejectsWith(checkProviderUrl('https://localhost/', 'issuer_url', strict), 'INVALID_ARGUMENT', /issuer_url resolves to a private or loopback address/);
  });

  test('a literal public address passes', async () => {
    assert.equal((await checkProviderUrl('https://8.8.8.8/x', 'issuer_url', strict)).href, 'https://8.8.8.8/x');
    assert.equal((await checkProviderUrl('https://[2606:4700::1111]/', 'issuer_url', strict)).hostname, '[2606:4700::1111]');
  });

  test('user name, password and fragment are refused', async () => {
    await rejectsWith(checkProviderUrl('https://admin:pw@8.8.8.8/', 'issuer_url', relaxed), 'INVALID_ARGUMENT', /must not contain a user name or password/);
    await rejectsWith(checkProviderUrl('https://admin@8.8.8.8/', 'issuer_url', strict), 'INVALID_ARGUMENT', /must not contain a user name or password/);
    await rejectsWith(checkProviderUrl('https://8.8.8.8/#x', 'issuer_url', strict), 'INVALID_ARGUMENT', /must not contain a fragment/);
    await rejectsWith(checkProviderUrl('https://8.8.8.8/#', 'issuer_url', strict), 'INVALID_ARGUMENT', /must not contain a fragment/);
  });

  test('a name that does not resolve is refused', async () => {
    await rejectsWith(checkProviderUrl('https://no-such-host.invalid/', 'issuer_url', relaxed), 'INVALID_ARGUMENT', /issuer_url host 'no-such-host.invalid' does not resolve/);
  });

  test('localhost is accepted when private networks are allowed', async () => {
    assert.equal((await checkProviderUrl('https://localhost:8443/', 'issuer_url', relaxed)).host, 'localhost:8443');
  });
});

describe('createGuardedFetch', () => {
  let server: Server;
  let port: number;
  const handlers = new Map<string, RequestListener>();

  before(async () => {
    server = createServer((req, res) => {
      const handler = handlers.get(new URL(req.url ?? '/', 'http://x').pathname);
      if (handler) return handler(req, res);
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  handlers.set('/json', (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
  handlers.set('/echo', (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({ method: req.method, body: Buffer.concat(chunks).toString('utf8'), contentType: req.headers['content-type'], auth: req.headers.authorization }),
      ),
    );
  });
  handlers.set('/redirect', (_req, res) => res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end());
  handlers.set('/silent', () => {
    /* never answers */
  });
  handlers.set('/huge', (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream' }); // chunked: no content-length
    const chunk = Buffer.alloc(64 * 1024, 'a');
    let sent = 0;
    const pump = (): void => {
      while (sent < 64 && res.write(chunk)) sent += 1;
      if (sent < 64) res.once('drain', pump);
      else res.end();
    };
    pump();
  });
  handlers.set('/declared-huge', (_req, res) => res.writeHead(200, { 'content-length': String(10 * 1024 * 1024) }).end());

  test('refuses the local server by literal address and by name when private networks are not allowed', async () => {
    const guarded = createGuardedFetch({ allowPrivateNetworks: false });
    await rejectsWith(guarded(`http://127.0.0.1:${port}/json`), 'FAILED_PRECONDITION', /127\.0\.0\.1 resolves to a private or loopback address; set SSO_ALLOW_PRIVATE_NETWORKS=true/);
    await rejectsWith(guarded(`http://localhost:${port}/json`), 'FAILED_PRECONDITION', /localhost resolves to a private or loopback address/);
  });

  test('reaches the local server when private networks are allowed', async () => {
    const guarded = createGuardedFetch({ allowPrivateNetworks: true });
    for (const host of ['127.0.0.1', 'localhost']) {
      const response = await guarded(`http://${host}:${port}/json`);
      assert.equal(response.status, 200);
      assert.equal(response.headers.get('content-type'), 'application/json');
      assert.deepEqual(await response.json(), { ok: true });
    }
  });

  test('sends form bodies (string, URLSearchParams, bytes) with their headers', async () => {
    const guarded = createGuardedFetch({ allowPrivateNetworks: true });
    const form = new URLSearchParams({ grant_type: 'authorization_code', code: 'a b' });
    const viaParams = await guarded(`http://127.0.0.1:${port}/echo`, { method: 'POST', body: form, headers: { authorization: 'Basic eDp5' } });
    assert.deepEqual(await viaParams.json(), {
      method: 'POST',
      body: 'grant_type=authorization_code&code=a+b',
      contentType: 'application/x-www-form-urlencoded;charset=UTF-8',
      auth: 'Basic eDp5',
    });
    const viaString = await guarded(`http://127.0.0.1:${port}/echo`, { method: 'POST', body: 'x=1', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    assert.equal(((await viaString.json()) as { body: string }).body, 'x=1');
    const viaBytes = await guarded(`http://127.0.0.1:${port}/echo`, { method: 'POST', body: new TextEncoder().encode('y=2') });
    assert.equal(((await viaBytes.json()) as { body: string }).body, 'y=2');
  });

  test('returns redirects without following them', async () => {
    const response = await createGuardedFetch({ allowPrivateNetworks: true })(`http://127.0.0.1:${port}/redirect`);
    assert.equal(response.status, 302);
    assert.equal(response.headers.get('location'), 'http://169.254.169.254/latest/meta-data/');
  });

  test('gives up on a server that never answers after timeoutMs', async () => {
    const started = Date.now();
    await rejectsWith(createGuardedFetch({ allowPrivateNetworks: true, timeoutMs: 300 })(`http://127.0.0.1:${port}/silent`), 'UNAVAILABLE', /did not answer within 300 ms/);
    const elapsed = Date.now() - started;
    assert.ok(elapsed >= 280 && elapsed < 2_000, `gave up after ${elapsed} ms`);
  });

  test('refuses bodies above maxResponseBytes, streamed or declared', async () => {
    const guarded = createGuardedFetch({ allowPrivateNetworks: true, maxResponseBytes: 1024 * 1024 });
    await rejectsWith(guarded(`http://127.0.0.1:${port}/huge`), 'UNAVAILABLE', /larger than 1048576 bytes/);
    await rejectsWith(guarded(`http://127.0.0.1:${port}/declared-huge`), 'UNAVAILABLE', /larger than 1048576 bytes/);
  });

  test('honours an aborted signal', async () => {
    const controller = new AbortController();
    const pending = createGuardedFetch({ allowPrivateNetworks: true })(`http://127.0.0.1:${port}/silent`, { signal: controller.signal });
    setTimeout(() => controller.abort(new DOMException('stop', 'AbortError')), 50);
    await assert.rejects(pending, (error: unknown) => error instanceof DOMException && error.name === 'AbortError');
  });

  test('an unreachable port is UNAVAILABLE', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const freePort = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    await rejectsWith(createGuardedFetch({ allowPrivateNetworks: true })(`http://127.0.0.1:${freePort}/`), 'UNAVAILABLE', /could not reach 127\.0\.0\.1/);
  });
});
