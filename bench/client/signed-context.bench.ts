/**
 * Signed-context overhead per OFREP request (docs/client-side.md "4. Signed contexts"), measured in
 * one run against its own baseline: the same single-flag OFREP request with a client key whose
 * `context_signing` is `off`, then with a `context` key and a signed token (verified from keys in
 * memory on every request), over real HTTP to the real server. Also the verification alone
 * (ContextTokenVerifier.bind on a loaded environment), to show what a token costs in microseconds.
 *
 *   npx tsx bench/client/signed-context.bench.ts [--rounds 7] [--round-ms 300]
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SignJWT } from 'jose';
import { openBenchDatabase } from '../support/bench-database.ts';
import { startBenchServer } from '../support/bench-server.ts';
import { runBenchmark, type Workload } from '../support/measure.ts';
import { call } from '../support/rest-call.ts';

const admin = { email: 'bench@example.com', password: 'bench-password-1' };
const database = await openBenchDatabase();
const { server } = await startBenchServer({
  databaseUrl: database.url,
  dataDir: mkdtempSync(path.join(tmpdir(), 'switchyard-bench-signed-')),
  admin,
  jwtSecret: 'signed-context-bench-secret-of-32-bytes!',
  env: {
    SSO_SECRETS_KEY: 'signed-context-bench-sso-secrets-key-32+',
  },
});
const base = `http://127.0.0.1:${server.httpPort}`;
try {
  const root = (await call(base, 'POST', '/v1/auth/login', undefined, admin)).token as string;
  const org = await call(base, 'POST', '/v1/admin/orgs', root, { name: 'bench' });
  const owner = { email: 'owner@example.com', password: 'owner-password-1' };
  await call(base, 'POST', `/v1/admin/orgs/${org.org_id}/users`, root, { ...owner, display_name: 'Bench owner', org_role: 'org_admin' });
  const rootToken = (await call(base, 'POST', '/v1/auth/login', undefined, { ...owner, org_id: org.org_id })).token as string;
  const project = await call(base, 'POST', `/v1/management/orgs/${org.org_id}/projects`, rootToken, { name: 'bench' });
  const environment = await call(base, 'POST', `/v1/management/projects/${project.project_id}/environments`, rootToken, { name: 'prod' });
  const env = environment.environment_id as string;
  await call(base, 'POST', `/v1/environments/${env}/flags`, rootToken, {
    flag: {
      key: 'plan-flag',
      value_type: 'bool',
      client_visible: true,
      variants: [{ key: 'on', value: true }, { key: 'off', value: false }],
      off_variant_key: 'off',
      rules: [{ id: 'enterprise', conditions: [{ attribute: 'plan', op: 'eq', values: ['enterprise'] }], variant_key: 'on' }],
    },
    enabled: true,
  });
  const keyBody = (mode: string) => ({ kind: 'client', name: mode, allowed_origins: ['https://app.example.com'], allow_missing_origin: true, context_signing: mode });
  const off = await call(base, 'POST', `/v1/management/environments/${env}/sdk-keys`, rootToken, keyBody('off'));
  const signed = await call(base, 'POST', `/v1/management/environments/${env}/sdk-keys`, rootToken, keyBody('context'));
  const { kid, secret } = await call(base, 'POST', `/v1/management/environments/${env}/context-signing-secrets`, rootToken);
  const token = await new SignJWT({ ck: signed.sdk_key_id, sub: 'user-42', ctx: { plan: 'free' } })
    .setProtectedHeader({ alg: 'HS256', kid })
    .setIssuedAt()
    .setExpirationTime('1h')
    .sign(new TextEncoder().encode(secret));

  const body = JSON.stringify({ context: { targetingKey: 'user-42', plan: 'enterprise' } });
  const ofrep = async (headers: Record<string, string>, expected: string): Promise<number> => {
    const response = await fetch(`${base}/ofrep/v1/evaluate/flags/plan-flag`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    const answer = (await response.json()) as { variant?: string };
    if (response.status !== 200 || answer.variant !== expected) throw new Error(`unexpected answer ${response.status} ${JSON.stringify(answer)}`);
    return 1;
  };
  const principal = await server.services.verifier.verifySdkKey(signed.raw_key);
  await server.services.contextTokens.bind(principal, token); // loads the environment's keys

  const workloads: Workload[] = [
    {
      name: 'baseline: OFREP single, client key, signing off',
      run: async (n) => {
        let sink = 0;
        for (let i = 0; i < n; i++) sink += await ofrep({ 'x-api-key': off.raw_key }, 'on');
        return sink;
      },
    },
    {
      name: 'OFREP single, client key, signed context',
      run: async (n) => {
        let sink = 0;
        // The token vouches for plan=free: the body's enterprise is ignored.
        for (let i = 0; i < n; i++) sink += await ofrep({ 'x-api-key': signed.raw_key, authorization: `Bearer ${token}` }, 'off');
        return sink;
      },
    },
    {
      name: 'token verification alone (keys in memory)',
      run: async (n) => {
        let sink = 0;
        for (let i = 0; i < n; i++) sink += (await server.services.contextTokens.bind(principal, token))?.claims.targetingKey.length ?? 0;
        return sink;
      },
    },
  ];
  await runBenchmark('client-signed-context', workloads);
} finally {
  await server.stop();
  await database.drop();
}
