import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { platform, tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { makeCertificates } from './support/certificates.ts';
import { checkHealth } from './support/grpc-health-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/** Resolves 'connected' or the socket error's code (e.g. ECONNREFUSED). */
function tcpConnect(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, host);
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

describe('bind addresses', () => {
  let it: TestServer;
  before(async () => {
    it = await startTestServer();
  });
  after(() => it.stop());

  // On Linux all of 127.0.0.0/8 reaches this machine, but a socket bound to 127.0.0.1 only
  // accepts connections to 127.0.0.1: 127.0.0.2 tells a loopback bind from a wildcard one.
  test('by default the internal gRPC port listens on 127.0.0.1 only; REST and the sync port on every address', { skip: platform() !== 'linux' }, async () => {
    assert.equal(await tcpConnect('127.0.0.1', it.server.grpcPort), 'connected');
    assert.equal(await tcpConnect('127.0.0.2', it.server.grpcPort), 'ECONNREFUSED');
    assert.equal(await tcpConnect('127.0.0.2', it.server.syncGrpcPort), 'connected');
    assert.equal(await tcpConnect('127.0.0.2', it.server.httpPort), 'connected');
    assert.equal(await checkHealth(it.server.grpcPort), 'SERVING', 'plaintext by default');
    assert.ok(it.logs.some((line) => line.includes('"host":"127.0.0.1"') && line.includes('internal gRPC listening')));
  });
});

describe('TLS on the gRPC ports', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'switchyard-tls-'));
  const certs = makeCertificates(dir);
  const read = (file: string): Buffer => readFileSync(file);
  const tlsClient = (): grpc.ChannelCredentials => grpc.credentials.createSsl(read(certs.ca));
  const tlsClientWithCert = (cert: string, key: string): grpc.ChannelCredentials => grpc.credentials.createSsl(read(certs.ca), read(key), read(cert));
  // The certificate also names localhost: checked by that name (TLS SNI takes no IP address).
  const byName = { 'grpc.ssl_target_name_override': 'localhost' };
  after(() => rmSync(dir, { recursive: true, force: true }));

  describe('server TLS (certificate and key)', () => {
    let it: TestServer;
    before(async () => {
      it = await startTestServer({
        GRPC_TLS_CERT_FILE: certs.serverCert,
        GRPC_TLS_KEY_FILE: certs.serverKey,
        SYNC_GRPC_TLS_CERT_FILE: certs.serverCert,
        SYNC_GRPC_TLS_KEY_FILE: certs.serverKey,
      }, { topology: 'single' }); // the ports' own TLS settings, as one process serves them
    });
    after(() => it.stop());

    test('a plaintext client fails on both ports, a TLS client trusting the CA succeeds', async () => {
      for (const port of [it.server.grpcPort, it.server.syncGrpcPort]) {
        await assert.rejects(checkHealth(port), (error: grpc.ServiceError) => error.code === grpc.status.UNAVAILABLE);
        assert.equal(await checkHealth(port, '', tlsClient(), byName), 'SERVING');
      }
    });
  });

  describe('mutual TLS (GRPC_TLS_CA_FILE)', () => {
    let it: TestServer;
    before(async () => {
      it = await startTestServer({ GRPC_TLS_CERT_FILE: certs.serverCert, GRPC_TLS_KEY_FILE: certs.serverKey, GRPC_TLS_CA_FILE: certs.ca }, { topology: 'single' });
    });
    after(() => it.stop());

    test('a client without a certificate, or with one of another CA, is refused; a CA-signed client certificate is accepted', async () => {
      const port = it.server.grpcPort;
      await assert.rejects(checkHealth(port, '', tlsClient(), byName), (error: grpc.ServiceError) => error.code === grpc.status.UNAVAILABLE);
      await assert.rejects(checkHealth(port, '', tlsClientWithCert(certs.strangerCert, certs.strangerKey), byName), (error: grpc.ServiceError) => error.code === grpc.status.UNAVAILABLE);
      await assert.rejects(checkHealth(port), (error: grpc.ServiceError) => error.code === grpc.status.UNAVAILABLE);
      assert.equal(await checkHealth(port, '', tlsClientWithCert(certs.clientCert, certs.clientKey), byName), 'SERVING');
      // The sync port has its own settings (SYNC_GRPC_TLS_*): still plaintext here.
      assert.equal(await checkHealth(it.server.syncGrpcPort), 'SERVING');
    });
  });
});
