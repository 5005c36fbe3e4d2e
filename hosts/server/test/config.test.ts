import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig } from '@switchyard/transport/config.ts';

describe('loadConfig', () => {
  test('defaults follow docs/contract.md "Processes and ports"', () => {
    const config = loadConfig({});
    assert.equal(config.appEnv, 'development');
    assert.equal(config.databaseUrl, null);
    assert.equal(config.httpPort, 8080);
    assert.equal(config.grpcPort, 9090);
    assert.equal(config.syncGrpcPort, 50050);
    assert.equal(config.embeddedPgPort, 54329);
    assert.equal(config.tokenTtlSeconds, 86400);
    assert.equal(config.dbPoolSize, 10);
    assert.equal(config.logFilter, 'info');
    assert.equal(config.jwtSecret, null);
    assert.equal(config.bootstrapAdmin, null);
    assert.equal(config.dataDir, '.data');
    assert.equal(config.trustProxy, false);
    assert.deepEqual([config.httpHost, config.grpcHost, config.syncGrpcHost], ['0.0.0.0', '127.0.0.1', '0.0.0.0']);
    assert.equal(config.grpcTls, null);
    assert.equal(config.syncGrpcTls, null);
    assert.deepEqual(config.httpTimeouts, { headersMs: 10_000, requestMs: 30_000, keepAliveMs: 72_000, idleMs: 120_000 });
    assert.deepEqual(config.grpcLimits, { maxConcurrentStreams: 1_000, maxConnectionIdleMs: 300_000 });
    assert.equal(config.syncMaxStreamsPerKey, 1_000);
    assert.equal(config.apiTokenFailuresPerAddress, 30);
    assert.deepEqual(config.sso, { publicUrl: null, secretsKey: null, allowPrivateNetworks: false });
  });

  test('single sign-on settings: PUBLIC_URL without a trailing slash, the secrets key, the private-network switch', () => {
    const sso = loadConfig({ PUBLIC_URL: 'https://flags.example.com/', SSO_SECRETS_KEY: 'k'.repeat(32), SSO_ALLOW_PRIVATE_NETWORKS: 'true' }).sso;
    assert.deepEqual(sso, { publicUrl: 'https://flags.example.com', secretsKey: 'k'.repeat(32), allowPrivateNetworks: true });
    assert.equal(loadConfig({ PUBLIC_URL: 'http://10.0.0.5:8080/base/' }).sso.publicUrl, 'http://10.0.0.5:8080/base');
    assert.equal(loadConfig({ SSO_ALLOW_PRIVATE_NETWORKS: 'false' }).sso.allowPrivateNetworks, false);
  });

  test('TRUST_PROXY: true is one trusted hop (never the leftmost entry), a hop count or addresses', () => {
    assert.equal(loadConfig({ TRUST_PROXY: 'true' }).trustProxy, 1);
    assert.equal(loadConfig({ TRUST_PROXY: '0' }).trustProxy, false);
    assert.equal(loadConfig({ TRUST_PROXY: '2' }).trustProxy, 2);
    assert.equal(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 127.0.0.1' }).trustProxy, '10.0.0.0/8, 127.0.0.1');
  });

  test('reads every variable', () => {
    const config = loadConfig({
      APP_ENV: 'production',
      DATABASE_URL: 'postgres://u:p@db:5432/app',
      HTTP_PORT: '8081',
      GRPC_PORT: '9091',
      SYNC_GRPC_PORT: '50051',
      RUST_LOG: 'warn,http=debug',
      JWT_SECRET: 'x'.repeat(32),
      TOKEN_TTL_SECONDS: '3600',
      DB_POOL_SIZE: '20',
      BOOTSTRAP_ADMIN_EMAIL: 'root@example.com',
      BOOTSTRAP_ADMIN_PASSWORD: 'correct horse',
    });
    assert.equal(config.appEnv, 'production');
    assert.equal(config.databaseUrl, 'postgres://u:p@db:5432/app');
    assert.deepEqual([config.httpPort, config.grpcPort, config.syncGrpcPort], [8081, 9091, 50051]);
    assert.equal(config.logFilter, 'warn,http=debug');
    assert.equal(config.tokenTtlSeconds, 3600);
    assert.equal(config.dbPoolSize, 20);
    assert.deepEqual(config.bootstrapAdmin, { email: 'root@example.com', password: 'correct horse' });
  });

  test('PASSWORD_HASH_COST: 10 by default, 4-15, never below 10 in production', () => {
    assert.equal(loadConfig({}).passwordHashCost, 10);
    assert.equal(loadConfig({ PASSWORD_HASH_COST: '4' }).passwordHashCost, 4);
    assert.equal(loadConfig({ PASSWORD_HASH_COST: '12', APP_ENV: 'production', DATABASE_URL: 'postgres://db/x', JWT_SECRET: 'x'.repeat(32) }).passwordHashCost, 12);
    const production = { APP_ENV: 'production', DATABASE_URL: 'postgres://db/x', JWT_SECRET: 'x'.repeat(32) };
    assert.throws(() => loadConfig({ ...production, PASSWORD_HASH_COST: '9' }), /PASSWORD_HASH_COST must be at least 10 when APP_ENV=production/);
    assert.throws(() => loadConfig({ PASSWORD_HASH_COST: '3' }), ConfigError);
    assert.throws(() => loadConfig({ PASSWORD_HASH_COST: '16' }), ConfigError);
  });

  test('LOG_LEVEL is an alias of RUST_LOG, which wins', () => {
    assert.equal(loadConfig({ LOG_LEVEL: 'debug' }).logFilter, 'debug');
    assert.equal(loadConfig({ LOG_LEVEL: 'debug', RUST_LOG: 'error' }).logFilter, 'error');
  });

  const rejects: Array<[string, Record<string, string>, RegExp]> = [
    ['production without DATABASE_URL', { APP_ENV: 'production', JWT_SECRET: 'x'.repeat(32) }, /DATABASE_URL is required/],
    ['production without JWT_SECRET', { APP_ENV: 'production', DATABASE_URL: 'postgres://h/db' }, /JWT_SECRET is required/],
    ['a short JWT_SECRET', { JWT_SECRET: 'short' }, /at least 32 bytes/],
    ['a port that is not a number', { HTTP_PORT: 'eighty' }, /HTTP_PORT must be an integer/],
    ['a port out of range', { GRPC_PORT: '70000' }, /GRPC_PORT must be an integer/],
    ['a pool size of zero', { DB_POOL_SIZE: '0' }, /DB_POOL_SIZE/],
    ['an unknown APP_ENV', { APP_ENV: 'staging' }, /APP_ENV must be/],
    ['an unknown log level', { RUST_LOG: 'loud' }, /unknown level/],
    ['a DATABASE_URL of another scheme', { DATABASE_URL: 'mysql://h/db' }, /postgres:\/\//],
    ['a DATABASE_URL that is not a URL', { DATABASE_URL: 'not a url' }, /not a valid URL/],
    ['a bootstrap email without password', { BOOTSTRAP_ADMIN_EMAIL: 'a@b.c' }, /set together/],
    ['a TRUST_PROXY that is not an address list', { TRUST_PROXY: 'yes please' }, /TRUST_PROXY/],
    ['a bind address that is not one', { GRPC_HOST: 'every where' }, /GRPC_HOST must be an IP address/],
    ['a TLS certificate without its key', { GRPC_TLS_CERT_FILE: '/etc/hostname' }, /GRPC_TLS_CERT_FILE and GRPC_TLS_KEY_FILE must be set together/],
    ['a TLS key without its certificate', { SYNC_GRPC_TLS_KEY_FILE: '/etc/hostname' }, /SYNC_GRPC_TLS_CERT_FILE and SYNC_GRPC_TLS_KEY_FILE must be set together/],
    ['a client CA without a server certificate', { GRPC_TLS_CA_FILE: '/etc/hostname' }, /GRPC_TLS_CA_FILE needs/],
    ['an unreadable TLS file', { GRPC_TLS_CERT_FILE: '/nonexistent/cert.pem', GRPC_TLS_KEY_FILE: '/nonexistent/key.pem' }, /GRPC_TLS_CERT_FILE: cannot read \/nonexistent\/cert.pem \(ENOENT\)/],
    ['TLS files that are not PEM', { GRPC_TLS_CERT_FILE: '/etc/hostname', GRPC_TLS_KEY_FILE: '/etc/hostname' }, /not a usable PEM certificate and key/],
    ['a header timeout beyond the request timeout', { HTTP_HEADERS_TIMEOUT_MS: '40000' }, /HTTP_HEADERS_TIMEOUT_MS \(40000\) must not exceed HTTP_REQUEST_TIMEOUT_MS/],
    ['a stream cap of zero', { SYNC_MAX_STREAMS_PER_KEY: '0' }, /SYNC_MAX_STREAMS_PER_KEY/],
    ['an API token failure allowance of zero', { API_TOKEN_FAILURES_PER_ADDRESS: '0' }, /API_TOKEN_FAILURES_PER_ADDRESS/],
    ['a PUBLIC_URL that is not a URL', { PUBLIC_URL: 'flags.example.com' }, /PUBLIC_URL is not a valid URL/],
    ['a PUBLIC_URL with a query', { PUBLIC_URL: 'https://flags.example.com/?x=1' }, /PUBLIC_URL must be an http\(s\) address/],
    ['a PUBLIC_URL of another scheme', { PUBLIC_URL: 'ftp://flags.example.com' }, /PUBLIC_URL must be an http\(s\) address/],
    ['a short SSO_SECRETS_KEY', { SSO_SECRETS_KEY: 'short' }, /SSO_SECRETS_KEY must be at least 32/],
    ['an SSO_ALLOW_PRIVATE_NETWORKS that is not a boolean', { SSO_ALLOW_PRIVATE_NETWORKS: 'maybe' }, /SSO_ALLOW_PRIVATE_NETWORKS must be true or false/],
    ['a short bootstrap password', { BOOTSTRAP_ADMIN_EMAIL: 'a@b.c', BOOTSTRAP_ADMIN_PASSWORD: 'short' }, /at least 8/],
  ];
  for (const [name, env, message] of rejects) {
    test(`refuses ${name} with one clear line`, () => {
      assert.throws(() => loadConfig(env), (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.match(error.message, message);
        assert.ok(!error.message.includes('\n'));
        return true;
      });
    });
  }
});
