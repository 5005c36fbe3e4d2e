import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { makeCertificates } from './support/certificates.ts';
import { api, loginAdmin } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * A gateway reaching services that require mutual TLS (docs/security.md "Gateways and the services
 * process"): with SERVICES_TLS_* it connects and serves; without a client certificate the services
 * refuse it and it never becomes ready.
 */
describe('gateway to services over mutual TLS', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'switchyard-gateway-tls-'));
  const certs = makeCertificates(dir);
  const servicesTls = { GRPC_TLS_CERT_FILE: certs.serverCert, GRPC_TLS_KEY_FILE: certs.serverKey, GRPC_TLS_CA_FILE: certs.ca };
  let it: TestServer | undefined;
  after(async () => {
    await it?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('with a CA-signed client certificate the gateway is ready and serves through the services', { timeout: 60_000 }, async () => {
    it = await startTestServer(
      { ...servicesTls, SERVICES_TLS_CA_FILE: certs.ca, SERVICES_TLS_CERT_FILE: certs.clientCert, SERVICES_TLS_KEY_FILE: certs.clientKey },
      { topology: 'split' },
    );
    assert.equal((await fetch(`${it.base}/readyz`)).status, 200);
    const admin = await loginAdmin(api(it.base));
    assert.ok(admin.token.length > 0);
  });

  test('without a client certificate the services refuse the gateway: it never becomes ready', { timeout: 60_000 }, async () => {
    await assert.rejects(startTestServer({ ...servicesTls, SERVICES_TLS_CA_FILE: certs.ca }, { topology: 'split' }), /did not become ready/);
  });
});
