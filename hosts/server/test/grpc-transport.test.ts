import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { platform, tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
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

/** A CA, a server certificate for 127.0.0.1/localhost and client certificates, made with the openssl CLI. */
function makeCertificates(dir: string): Record<'ca' | 'serverCert' | 'serverKey' | 'clientCert' | 'clientKey' | 'strangerCert' | 'strangerKey', string> {
  const file = (name: string): string => path.join(dir, name);
  const openssl = (...args: string[]): void => {
    execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  };
  const newCa = (name: string): void =>
    openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2', '-subj', `/CN=${name}`,
      '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign', '-keyout', file(`${name}.key`), '-out', file(`${name}.pem`));
  const issue = (name: string, ca: string, extensions: string): void => {
    writeFileSync(file(`${name}.ext`), extensions);
    openssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-subj', `/CN=${name}`, '-keyout', file(`${name}.key`), '-out', file(`${name}.csr`));
    openssl('x509', '-req', '-in', file(`${name}.csr`), '-CA', file(`${ca}.pem`), '-CAkey', file(`${ca}.key`), '-CAcreateserial', '-days', '2', '-extfile', file(`${name}.ext`), '-out', file(`${name}.pem`));
  };
  newCa('ca');
  newCa('other-ca');
  issue('server', 'ca', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  issue('client', 'ca', 'extendedKeyUsage=clientAuth\n');
  issue('stranger', 'other-ca', 'extendedKeyUsage=clientAuth\n');
  return {
    ca: file('ca.pem'),
    serverCert: file('server.pem'),
    serverKey: file('server.key'),
    clientCert: file('client.pem'),
    clientKey: file('client.key'),
    strangerCert: file('stranger.pem'),
    strangerKey: file('stranger.key'),
  };
}

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
