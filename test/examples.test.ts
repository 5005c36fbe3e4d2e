import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { defineMetric } from '../hosts/server/test/support/experiment-fixtures.ts';
import { createFlag, envFlags, put } from '../hosts/server/test/support/flag-client.ts';
import { api, expectStatus, loginAdmin, seedTenant, type ApiClient, type Tenant } from '../hosts/server/test/support/rest-client.ts';
import { startTestServer, TEST_ADMIN, type TestServer } from '../hosts/server/test/support/test-server.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../', import.meta.url));

/** A long-running example: its output lines as they come, a wait for one, its exit. */
function startExample(file: string, env: Record<string, string>): { lines: string[]; waitFor(pattern: RegExp): Promise<string>; signal(name: NodeJS.Signals): void; exited: Promise<number | null> } {
  const child = spawn(process.execPath, ['--import', 'tsx', file], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  let stderr = '';
  const waiters: Array<{ pattern: RegExp; resolve: (line: string) => void }> = [];
  let partial = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    partial += chunk;
    const complete = partial.split('\n');
    partial = complete.pop()!;
    for (const line of complete) {
      lines.push(line);
      for (const waiter of waiters.filter((w) => w.pattern.test(line))) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(line);
      }
    }
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    lines,
    waitFor(pattern) {
      const seen = lines.find((line) => pattern.test(line));
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          child.kill('SIGKILL');
          reject(new Error(`${file}: no line matching ${pattern} within 30 s\nstdout:\n${lines.join('\n')}\nstderr:\n${stderr}`));
        }, 30_000);
        waiters.push({ pattern, resolve: (line) => (clearTimeout(timer), resolve(line)) });
      });
    },
    signal: (name) => child.kill(name),
    exited,
  };
}

/** A boolean flag: on for country DE/FR on the pro plan, off for everyone else. */
const checkoutFlag = (key: string) => ({
  flag: {
    key,
    description: 'the redesigned checkout',
    value_type: 'bool',
    variants: [
      { key: 'on', value: true },
      { key: 'off', value: false },
    ],
    off_variant_key: 'off',
    rules: [
      {
        conditions: [
          { attribute: 'country', op: 'in', values: ['DE', 'FR'] },
          { attribute: 'plan', op: 'eq', values: ['pro'] },
        ],
        variant_key: 'on',
      },
    ],
  },
  enabled: true,
});

/** The examples are documentation: they must keep running against the code as it is. */
describe('examples', () => {
  test('evaluate-locally.ts evaluates with the pure core', async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'examples/evaluate-locally.ts'], { cwd: ROOT });
    assert.deepEqual(stdout.trim().split('\n'), ['u-1: on (TARGETING_MATCH)', 'u-2: on (SPLIT, bucket 11170)', 'u-3: off (DEFAULT)']);
  });

  test('browser-app/serve.ts bundles the page with the stock packages and serves it from its own port', async () => {
    const app = startExample('examples/browser-app/serve.ts', { ENVIRONMENT_ID: 'env-example', CLIENT_KEY: 'ck_example', PORT: '0', FLAG_KEY: 'page-flag' });
    try {
      const line = await app.waitFor(/^serving the browser app on http:\/\/127\.0\.0\.1:\d+/);
      const origin = /(http:\/\/127\.0\.0\.1:\d+)/.exec(line)![1]!;
      const page = await fetch(origin + '/');
      assert.equal(page.status, 200);
      assert.match(await page.text(), /<script type="module" src="\/app.js">/);
      const script = await (await fetch(origin + '/app.js')).text();
      // The configuration is baked in; the stock provider (its OFREP path) and @switchyard/web are bundled.
      for (const piece of ['ck_example', 'env-example', 'page-flag', '/ofrep/v1/evaluate/flags', 'switchyard.anonymous-targeting-key']) assert.ok(script.includes(piece), `the bundle has ${piece}`);
      assert.equal((await fetch(origin + '/nothing')).status, 404);
    } finally {
      app.signal('SIGTERM');
      await app.exited;
    }
    // A server key is refused before anything is served.
    const refused = await run(process.execPath, ['--import', 'tsx', 'examples/browser-app/serve.ts'], { cwd: ROOT, env: { ...process.env, ENVIRONMENT_ID: 'e', CLIENT_KEY: 'sdk_secret' } }).then(
      () => assert.fail('served with a server key'),
      (error: { code: number; stderr: string }) => error,
    );
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /server key/);
  });

  describe('admin-quickstart.sh against a running server', () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer();
    });
    after(() => server.stop());

    test('creates an org, its admin, a project, an environment and a working SDK key', async () => {
      const { stdout } = await run('bash', ['examples/admin-quickstart.sh'], {
        cwd: ROOT,
        env: { ...process.env, BASE: server.base, ADMIN_EMAIL: TEST_ADMIN.email, ADMIN_PASSWORD: TEST_ADMIN.password },
      });
      const key = /SDK key \(store it now, it is not shown again\): (sdk_\S+)/.exec(stdout)?.[1];
      assert.ok(key, stdout);
      const principal = await server.server.services.verifier.verifySdkKey(key);
      assert.equal(principal.kind, 'sdk_key');
      const environment = /environment (\S+)/.exec(stdout)?.[1];
      assert.equal(principal.kind === 'sdk_key' ? principal.environmentId : '', environment);
    });
  });

  describe('SDK and OpenFeature apps against a running server', () => {
    let server: TestServer;
    let rest: ApiClient;
    let tenant: Tenant;
    let appEnv: Record<string, string>;
    before(async () => {
      server = await startTestServer();
      rest = api(server.base);
      tenant = await seedTenant(rest, (await loginAdmin(rest)).token, 'examples');
      await createFlag(rest, tenant.admin.token, tenant.environmentId, checkoutFlag('sdk-checkout'));
      await createFlag(rest, tenant.admin.token, tenant.environmentId, checkoutFlag('of-checkout'));
      await defineMetric(rest, tenant, 'revenue', 'double');
      await defineMetric(rest, tenant, 'spend', 'double');
      appEnv = { SDK_KEY: tenant.rawKey, BASE_URL: server.base, SYNC_URL: `127.0.0.1:${server.server.syncGrpcPort}`, RUN_MS: '60000' };
    });
    after(() => server.stop());

    /** Runs one app: its first value, a REST change it must see, then SIGINT; returns its output. */
    async function runApp(file: string, flagKey: string, metricKey: string, extra: Record<string, string> = {}): Promise<string[]> {
      const app = startExample(file, { ...appEnv, FLAG_KEY: flagKey, METRIC_KEY: metricKey, ...extra });
      await app.waitFor(new RegExp(`^tracked ${metricKey}`));
      expectStatus(await put(rest, `${envFlags(tenant.environmentId)}/${flagKey}`, { token: tenant.admin.token, body: { flag: { rules: [] } } }), 200, 'update the flag');
      await app.waitFor(new RegExp(`^${flagKey} for user-1: false`));
      app.signal('SIGINT');
      await app.waitFor(/^flushed and closed$/);
      assert.equal(await app.exited, 0, app.lines.join('\n'));
      return app.lines;
    }

    async function storedEvents(metricKey: string): Promise<Array<[string, number]>> {
      const rows = await server.db.sql<{ context_key: string; value: number }[]>`
        SELECT context_key, value FROM events WHERE environment_id = ${tenant.environmentId} AND metric_key = ${metricKey}`;
      return rows.map((row) => [row.context_key, Number(row.value)]);
    }

    test('sdk-app.ts: ready, a value, a change, a tracked event delivered on SIGINT', async () => {
      const lines = await runApp('examples/sdk-app.ts', 'sdk-checkout', 'revenue', { ENVIRONMENT_ID: tenant.environmentId });
      assert.deepEqual(lines, [
        `ready: environment ${tenant.environmentId}, 2 flags (state ready)`,
        'sdk-checkout for user-1: true (TARGETING_MATCH, variant on)',
        'tracked revenue = 42.5 for user-1',
        'change: sdk-checkout',
        'sdk-checkout for user-1: false (DEFAULT, variant off)',
        'stopping (SIGINT)',
        'flushed and closed',
      ]);
      assert.deepEqual(await storedEvents('revenue'), [['user-1', 42.5]]);
    });

    test('openfeature-app.ts: the same through the OpenFeature client (environment learnt from the key)', async () => {
      const lines = await runApp('examples/openfeature-app.ts', 'of-checkout', 'spend');
      assert.deepEqual(lines, [
        `ready: provider switchyard, environment ${tenant.environmentId}`,
        'of-checkout for user-1: true (TARGETING_MATCH, variant on)',
        'tracked spend = 42.5 for user-1',
        'change: of-checkout',
        'of-checkout for user-1: false (DEFAULT, variant off)',
        'stopping (SIGINT)',
        'flushed and closed',
      ]);
      assert.deepEqual(await storedEvents('spend'), [['user-1', 42.5]]);
    });

    test('RUN_MS ends the apps by themselves, events delivered', async () => {
      for (const file of ['examples/sdk-app.ts', 'examples/openfeature-app.ts']) {
        const { stdout } = await run(process.execPath, ['--import', 'tsx', file], { cwd: ROOT, env: { ...process.env, ...appEnv, FLAG_KEY: 'sdk-checkout', RUN_MS: '200' } });
        assert.deepEqual(stdout.trim().split('\n').slice(-2), ['stopping (ran 200 ms)', 'flushed and closed'], `${file}:\n${stdout}`);
      }
      assert.equal((await storedEvents('revenue')).length, 3);
    });

    test('without SDK_KEY the apps say what is missing', async () => {
      for (const file of ['examples/sdk-app.ts', 'examples/openfeature-app.ts']) {
        const { SDK_KEY: _, ...env } = { ...process.env, ...appEnv };
        const failed = await run(process.execPath, ['--import', 'tsx', file], { cwd: ROOT, env }).then(
          () => assert.fail(`${file} ran without SDK_KEY`),
          (error: { code: number; stderr: string }) => error,
        );
        assert.equal(failed.code, 2);
        assert.match(failed.stderr, /SDK_KEY is required/);
      }
    });
  });
});
