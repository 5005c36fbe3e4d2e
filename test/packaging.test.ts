import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { defineMetric } from '../hosts/server/test/support/experiment-fixtures.ts';
import { createFlag } from '../hosts/server/test/support/flag-client.ts';
import { api, loginAdmin, seedTenant, type Tenant } from '../hosts/server/test/support/rest-client.ts';
import { startTestServer, type TestServer } from '../hosts/server/test/support/test-server.ts';
import { buildPackages, packPackages } from '../scripts/build-packages.ts';

/**
 * The published packages are real packages: `npm run pack` builds @switchyard/core and
 * @switchyard/sdk to JavaScript with declarations, the tarballs install in an empty project, and
 * plain `node` (no tsx) runs an ES module and a CommonJS script that use both: core runs its own
 * shipped conformance vectors (its own murmur3, re2js and semver through the built code), the
 * SDK serves a TestData flag and then a real server's flag over the sync stream, and reports its
 * event delivery with `stats()`. The SDK alone installs small: at most 40 packages and 12.75 MB
 * (docs/sdk.md "Packages"); experiment statistics (@switchyard/stats) are not in it. @switchyard/web
 * (ES modules only) runs in plain node, bundles for the browser with the stock OpenFeature
 * packages, and its declarations fit theirs.
 */

// topologies: single
// (The packages are under test here, not the deployment: the SDK's sync stream, events and
// provider through a gateway run in both topologies in packages/sdk/test. A second pass would
// build, pack and install every package again, the suite's costliest minute, for nothing new.)

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../', import.meta.url));
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

let work: string;
let consumer: string;
let tarballs: string[];

/** The body both scripts share; `core`, `sdk` and `vectorPath` come from import or require. */
const SHARED = String.raw`
async function main(core, sdk, openfeature, vectorPath) {
  const out = {};
  out.provider = typeof openfeature.SwitchyardProvider;
  const read = (name) => JSON.parse(readFileSync(vectorPath(name), 'utf8'));

  // The evaluation and bucketing vectors shipped in @switchyard/core, run by the built code.
  const failures = [];
  const evaluation = read('evaluation.json').cases;
  for (const c of evaluation) {
    const members = c.list_members ?? {};
    const result = core.evaluate(c.flag, c.contexts, {
      projectId: c.project_id,
      environmentId: c.environment_id,
      segments: new Map((c.segments ?? []).map((s) => [s.key, s])),
      flags: new Map([...(c.flags ?? []), c.flag].map((f) => [f.key, f])),
      isListMember: (segment, key) => {
        const list = members[segment];
        return list !== undefined && !list.excluded.includes(key) && list.included.includes(key);
      },
    });
    const got = JSON.stringify([result.variant_key, result.value, result.is_enabled, result.reason, result.bucket, result.error_code, result.prerequisite_key]);
    const want = JSON.stringify([c.expected.variant_key, c.expected.value, c.expected.is_enabled, c.expected.reason, c.expected.bucket, c.expected.error_code, c.expected.prerequisite_key]);
    if (got !== want) failures.push(c.name + ': ' + got + ' != ' + want);
  }
  const bucketing = read('bucketing.json').cases;
  for (const c of bucketing) {
    const bucket = core.bucketFor(c.hash_input, c.flag_key, c.project_id, c.environment_id);
    if (bucket !== c.bucket) failures.push('bucket ' + c.hash_input + ': ' + bucket + ' != ' + c.bucket);
  }
  out.vectors = { evaluation: evaluation.length, bucketing: bucketing.length, failures };
  out.statistics = ['srmPValue', 'welchTTest', 'analyseExperiment'].filter((name) => name in core);

  // The SDK with a test data source: no server, no network.
  const td = new sdk.TestData();
  td.setFlag('packaged', 'from-test-data');
  const local = new sdk.SwitchyardClient({ testData: td });
  await local.waitForReady({ timeoutMs: 2000 });
  out.testData = local.variation('packaged', { key: 'user-1' }, 'fallback');
  await local.close();

  // And against a real server when the test gives one.
  if (process.env.SDK_KEY) {
    const client = new sdk.SwitchyardClient({ sdkKey: process.env.SDK_KEY, baseUrl: process.env.BASE_URL, syncUrl: process.env.SYNC_URL, logger: sdk.silentLogger });
    await client.waitForReady({ timeoutMs: 15000 });
    out.server = client.variation('packaged', { key: 'user-1' }, 'fallback');
    client.track('packaged-metric', { key: process.env.CONSUMER_NAME }, true);
    client.track('not-a-metric', { key: process.env.CONSUMER_NAME }, true);
    await client.close();
    out.delivery = client.stats();
  }
  console.log(JSON.stringify(out));
}
`;

const ESM = `import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as core from '@switchyard/core';
import * as sdk from '@switchyard/sdk';
import * as openfeature from '@switchyard/sdk/openfeature';
${SHARED}
await main(core, sdk, openfeature, (name) => fileURLToPath(import.meta.resolve('@switchyard/core/test-vectors/' + name)));
`;

const CJS = `'use strict';
const { readFileSync } = require('node:fs');
const core = require('@switchyard/core');
const sdk = require('@switchyard/sdk');
const openfeature = require('@switchyard/sdk/openfeature');
${SHARED}
main(core, sdk, openfeature, (name) => require.resolve('@switchyard/core/test-vectors/' + name)).catch((error) => {
  console.error(error);
  process.exit(1);
});
`;

/** Type-checks against the installed declarations, as a TypeScript user would (both conditions). */
const TYPES = `import { bucketFor, evaluate, type Flag } from '@switchyard/core';
import { SwitchyardClient, TestData, type SwitchyardOptions } from '@switchyard/sdk';
const td = new TestData().setFlag('packaged', true);
const options: SwitchyardOptions = { testData: td };
const client = new SwitchyardClient(options);
const on: boolean = client.variation('packaged', { key: 'user-1' }, false);
const bucket: number = bucketFor('user-1', 'packaged', 'p', 'e');
declare const flag: Flag;
const reason: string = evaluate(flag, { context_type: 'user', key: 'u' }, { projectId: 'p', environmentId: 'e' }).reason;
export { on, bucket, reason };
`;

/** The stock packages @switchyard/web is used with, at the versions the repository tests against. */
const rootManifest = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
const WEB_PEERS = ['@openfeature/web-sdk', '@openfeature/ofrep-web-provider'].map((name) => `${name}@${rootManifest.devDependencies[name]}`);

/** @switchyard/web in plain node: nothing on import needs a browser; the helpers work with what is handed in. */
const WEB_ESM = `import * as web from '@switchyard/web';
const storage = new Map();
const store = { getItem: (k) => storage.get(k) ?? null, setItem: (k, v) => void storage.set(k, v) };
const key = web.anonymousTargetingKey({ storage: store });
const sent = [];
const sy = web.createSwitchyardWeb({ baseUrl: 'https://flags.example.com/', environmentId: 'env-1', clientKey: 'ck_x', eventTarget: null,
  fetch: async (url, init) => (sent.push({ url, body: JSON.parse(init.body) }), { status: 202, headers: { get: () => null } }) });
sy.exposureHook.after({ flagKey: 'f', context: { targetingKey: key } }, { flagKey: 'f', value: true, variant: 'on', reason: 'SPLIT' });
await sy.flush();
await sy.close();
console.log(JSON.stringify({ key, again: web.anonymousTargetingKey({ storage: store }) === key, options: web.ofrepProviderOptions({ baseUrl: 'https://flags.example.com', clientKey: 'ck_x' }).headers, sent }));
`;

/** A page's module: the stock provider with @switchyard/web, as a browser bundle would import them. */
const WEB_PAGE = `import { OpenFeature } from '@openfeature/web-sdk';
import { OFREPWebProvider } from '@openfeature/ofrep-web-provider';
import { anonymousTargetingKey, createSwitchyardWeb } from '@switchyard/web';
const web = createSwitchyardWeb({ baseUrl: 'https://flags.example.com', environmentId: 'env-1', clientKey: 'ck_x' });
OpenFeature.addHooks(web.exposureHook);
await OpenFeature.setContext({ targetingKey: anonymousTargetingKey() });
await OpenFeature.setProviderAndWait(new OFREPWebProvider(web.providerOptions()));
`;

/** The declarations fit the stock packages' types: the hook is a Hook, the options are provider options. */
const WEB_TYPES = `import { OpenFeature, type Hook } from '@openfeature/web-sdk';
import { OFREPWebProvider } from '@openfeature/ofrep-web-provider';
import { anonymousTargetingKey, createSwitchyardWeb, ofrepProviderOptions, type SwitchyardWeb } from '@switchyard/web';
const web: SwitchyardWeb = createSwitchyardWeb({ baseUrl: 'https://flags.example.com', environmentId: 'env-1', clientKey: 'ck_x', contextToken: async () => 'token' });
const hook: Hook = web.exposureHook;
OpenFeature.addHooks(hook);
const provider = new OFREPWebProvider(web.providerOptions({ pollInterval: 10_000 }));
const other = new OFREPWebProvider({ ...ofrepProviderOptions({ baseUrl: 'https://flags.example.com', clientKey: 'ck_x' }), timeoutMs: 5000 });
const key: string = anonymousTargetingKey();
web.track('checkout', { targetingKey: key }, 19.5);
export { provider, other };
`;

before(async () => {
  work = mkdtempSync(path.join(tmpdir(), 'switchyard-packaging-'));
  const built = await buildPackages({ outDir: path.join(work, 'build') });
  tarballs = await packPackages(built, path.join(work, 'tarballs'));
  consumer = path.join(work, 'consumer');
  mkdirSync(consumer);
  writeFileSync(path.join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true }));
  // @openfeature/server-sdk: the optional peer dependency of @switchyard/sdk/openfeature; the web
  // SDK and the OFREP web provider: what @switchyard/web is used with.
  await run(npm, ['install', ...tarballs, '@openfeature/server-sdk', ...WEB_PEERS, '--prefer-offline', '--no-audit', '--no-fund'], { cwd: consumer, maxBuffer: 16 * 1024 * 1024 });
  writeFileSync(path.join(consumer, 'consumer.mjs'), ESM);
  writeFileSync(path.join(consumer, 'consumer.cjs'), CJS);
  writeFileSync(path.join(consumer, 'types.mts'), TYPES);
  writeFileSync(path.join(consumer, 'types.cts'), TYPES);
  writeFileSync(path.join(consumer, 'web.mjs'), WEB_ESM);
  writeFileSync(path.join(consumer, 'web-types.mts'), WEB_TYPES);
  writeFileSync(path.join(consumer, 'web-page.mjs'), WEB_PAGE);
});

after(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

async function runConsumer(script: string, env: Record<string, string> = {}): Promise<any> {
  const { stdout } = await run(process.execPath, [script], { cwd: consumer, env: { PATH: process.env.PATH ?? '', ...env }, timeout: 30_000 });
  return JSON.parse(stdout.trim().split('\n').at(-1) ?? '');
}

/**
 * Type-checks consumer files (the end of `args`, after any extra options) as a strict TypeScript
 * user would, against the installed packages' declarations (theirs and their dependencies' are
 * checked too: a broken declaration of ours still fails). TypeScript's own
 * lib.*.d.ts files are not checked again (`--skipDefaultLibCheck`: they ship with the compiler,
 * and re-checking lib.dom.d.ts was ~4 s of CPU per run).
 */
async function typeCheckConsumer(args: string[]): Promise<void> {
  const tsc = path.join(ROOT, 'node_modules/typescript/bin/tsc');
  const options = ['--noEmit', '--strict', '--skipDefaultLibCheck', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022', '--typeRoots', path.join(ROOT, 'node_modules/@types'), '--types', 'node'];
  await run(process.execPath, [tsc, ...options, ...args], { cwd: consumer }).catch((error: { stdout?: string }) => assert.fail(error.stdout));
}

function tarballFiles(tarball: string): Promise<string[]> {
  return run('tar', ['tzf', tarball]).then(({ stdout }) => stdout.trim().split('\n').map((file) => file.replace(/^package\//, '')));
}

describe('packages', () => {
  test('the tarballs hold JavaScript and declarations, not sources, fakes or tests', async () => {
    assert.deepEqual(tarballs.map((file) => path.basename(file)), ['switchyard-core-0.1.0.tgz', 'switchyard-sdk-0.1.0.tgz', 'switchyard-web-0.1.0.tgz']);
    for (const tarball of tarballs) {
      const files = await tarballFiles(tarball);
      const name = /switchyard-(\w+)-/.exec(path.basename(tarball))![1]!;
      // The browser package is ES modules only.
      const cjs = name === 'web' ? [] : ['cjs/index.js', 'cjs/index.d.ts', 'cjs/package.json'];
      for (const required of ['package.json', 'README.md', 'LICENSE', 'esm/index.js', 'esm/index.d.ts', ...cjs]) {
        assert.ok(files.includes(required), `${path.basename(tarball)} has ${required}`);
      }
      if (name === 'web') assert.deepEqual(files.filter((file) => file.startsWith('cjs/')), []);
      const strays = files.filter((file) => /^src\//.test(file) || /\/testing\/(index|contracts|in-memory)/.test(file) || /\.test\.|(^|\/)test\//.test(file) || (file.endsWith('.ts') && !file.endsWith('.d.ts')));
      assert.deepEqual(strays, [], `${path.basename(tarball)} ships no sources or tests`);
      const declarations = files.filter((file) => file.endsWith('.d.ts'));
      for (const file of declarations) {
        const text = readFileSync(path.join(consumer, 'node_modules', '@switchyard', name, file), 'utf8');
        assert.doesNotMatch(text, /from '\.{1,2}\/[^']*\.ts'/, `${file} imports .js, not .ts`);
      }
    }
    assert.ok((await tarballFiles(tarballs[0]!)).includes('test-vectors/evaluation.json'), 'core ships the conformance vectors');
  });

  test('the published manifests: no "private", conditional exports, small runtime dependencies', () => {
    const core = JSON.parse(readFileSync(path.join(consumer, 'node_modules/@switchyard/core/package.json'), 'utf8'));
    const sdk = JSON.parse(readFileSync(path.join(consumer, 'node_modules/@switchyard/sdk/package.json'), 'utf8'));
    for (const manifest of [core, sdk]) {
      assert.equal(manifest.private, undefined);
      assert.deepEqual(manifest.exports['.'], {
        import: { types: './esm/index.d.ts', default: './esm/index.js' },
        require: { types: './cjs/index.d.ts', default: './cjs/index.js' },
      });
      assert.equal(manifest.main, './cjs/index.js');
      // The Node versions .ci/run tests, as the repository's own manifest names them.
      assert.equal(manifest.engines.node, JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).engines.node);
    }
    // Evaluation needs these two (murmur3 is core's own); experiment statistics (@stdlib) live in @switchyard/stats, which is not published.
    assert.deepEqual(Object.keys(core.dependencies).sort(), ['re2js', 'semver']);
    // The sync stream is read with grpc-js (its .proto descriptor generated at build time, loaded by proto-loader).
    assert.deepEqual(Object.keys(sdk.dependencies).sort(), ['@grpc/grpc-js', '@grpc/proto-loader', '@switchyard/core']);
    assert.equal(sdk.dependencies['@switchyard/core'], core.version);
    const installed = readdirSync(path.join(consumer, 'node_modules'));
    for (const heavy of ['tsx', 'typescript', 'fastify', 'postgres', 'esbuild', '@stdlib']) assert.ok(!installed.includes(heavy), `${heavy} is not installed with the packages`);

    const web = JSON.parse(readFileSync(path.join(consumer, 'node_modules/@switchyard/web/package.json'), 'utf8'));
    assert.equal(web.private, undefined);
    assert.deepEqual(web.exports['.'], { types: './esm/index.d.ts', default: './esm/index.js' });
    assert.equal(web.main, './esm/index.js');
    assert.equal(web.sideEffects, false);
    assert.deepEqual(web.dependencies, {}, 'no runtime dependency: nothing but the package itself reaches a page');
    assert.ok(web.peerDependencies['@openfeature/web-sdk'], 'the web SDK it is used with is a peer');
  });

  test('@switchyard/web runs in plain node (nothing on import needs a browser) and sends its batches as documented', async () => {
    const out = await runConsumer('web.mjs');
    assert.match(out.key, /^anon-[0-9a-f-]{36}$/);
    assert.equal(out.again, true);
    assert.deepEqual(out.options, [['X-API-Key', 'ck_x']]);
    // The exposure batch, and the evaluation-count summary of the one read (docs/insights.md "SDK summaries").
    assert.deepEqual(out.sent.map((s: any) => s.url).sort(), ['https://flags.example.com/v1/environments/env-1/evaluation-summaries', 'https://flags.example.com/v1/environments/env-1/exposures']);
    const exposures = out.sent.find((s: any) => s.url.endsWith('/exposures'));
    assert.deepEqual(exposures.body.exposures.map((e: any) => [e.flag_key, e.variant_key, e.context_key]), [['f', 'on', out.key]]);
    const summary = out.sent.find((s: any) => s.url.endsWith('/evaluation-summaries'));
    assert.deepEqual(summary.body.counts, [{ flag_key: 'f', variant_key: 'on', reason: 'SPLIT', count: 1 }]);
  });

  test('@switchyard/web bundles for the browser with the stock provider, and its declarations fit the stock types', async () => {
    const esbuild = await import('esbuild');
    const bundle = await esbuild.build({ entryPoints: [path.join(consumer, 'web-page.mjs')], bundle: true, platform: 'browser', format: 'esm', write: false, logLevel: 'silent' });
    const text = bundle.outputFiles[0]!.text;
    assert.match(text, /anonymous-targeting-key/);
    assert.doesNotMatch(text, /require\(["']node:/, 'no Node built-in in the browser bundle');
    await typeCheckConsumer(['--lib', 'es2022,dom', 'web-types.mts']);
  });

  for (const script of ['consumer.mjs', 'consumer.cjs']) {
    test(`plain node runs ${script}: core's shipped vectors pass, the SDK serves a TestData flag, the OpenFeature provider loads`, async () => {
      const out = await runConsumer(script);
      assert.equal(out.provider, 'function');
      assert.deepEqual(out.vectors.failures, []);
      assert.ok(out.vectors.evaluation >= 40 && out.vectors.bucketing >= 40, JSON.stringify(out.vectors));
      assert.deepEqual(out.statistics, [], 'no experiment statistics in core');
      assert.equal(out.testData, 'from-test-data');
    });
  }

  test('the declarations type-check for an ES module and a CommonJS TypeScript user', async () => {
    await typeCheckConsumer(['types.mts', 'types.cts']);
  });

  describe('against a real server', () => {
    let server: TestServer;
    let tenant: Tenant;

    before(async () => {
      server = await startTestServer();
      const client = api(server.base);
      const admin = await loginAdmin(client);
      tenant = await seedTenant(client, admin.token, 'packaging');
      await createFlag(client, tenant.admin.token, tenant.environmentId, {
        flag: { key: 'packaged', value_type: 'string', variants: [{ key: 'served', value: 'from-the-server' }, { key: 'off', value: 'off' }], off_variant_key: 'off', rules: [{ id: 'all', conditions: [], variant_key: 'served' }] },
        enabled: true,
      });
      await defineMetric(client, tenant, 'packaged-metric', 'bool');
    });
    after(() => server.stop());

    for (const script of ['consumer.mjs', 'consumer.cjs']) {
      test(`${script} reads the flag over the sync stream and its tracked event is stored`, async () => {
        const out = await runConsumer(script, {
          SDK_KEY: tenant.rawKey,
          BASE_URL: server.base,
          SYNC_URL: `127.0.0.1:${server.server.syncGrpcPort}`,
          CONSUMER_NAME: script,
        });
        assert.equal(out.server, 'from-the-server');
        // One event stored, one rejected by the server (no metric "not-a-metric"), nothing left.
        assert.deepEqual(out.delivery, { queuedEvents: 0, queuedExposures: 0, droppedEvents: 1, droppedExposures: 0, sentEvents: 1, sentExposures: 0, failedAttempts: 0 });
        const sql = server.server.database.sql;
        const [row] = await sql<{ n: string }[]>`
          SELECT count(*) AS n FROM events WHERE org_id = ${tenant.orgId} AND environment_id = ${tenant.environmentId} AND context_key = ${script}`;
        assert.equal(Number(row?.n), 1, 'the event tracked before close() is stored');
      });
    }
  });
});

/**
 * What an application that only evaluates flags installs: the packed SDK and core in an empty
 * project, nothing else. Counted as npm lays it out: every directory under node_modules (nested
 * node_modules included) that holds a package.json is one package, `@scope/name` counted once;
 * the size is the sum of the files' sizes (the apparent size: what a file system with 4 KiB blocks
 * reports with `du` is larger, and is printed beside it).
 */
describe('the SDK alone', () => {
  const MAX_PACKAGES = 40;
  // Issue 33 asked for 10 MB. The floor is the sync stream's gRPC client, the chosen
  // @grpc/grpc-js: it brings @grpc/proto-loader (with yargs), protobufjs and @types/node, about
  // 9.8 MB of the whole (docs/sdk.md "Packages"). The bound keeps the rest from growing back
  // unnoticed: 12.5 MB until issue 40's insights domain in core (+80 KB, 12.55 MB installed).
  const MAX_BYTES = 12_750_000;
  let project: string;

  before(async () => {
    project = path.join(work, 'sdk-only');
    mkdirSync(project);
    writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'sdk-only', version: '1.0.0', private: true }));
    const sdkTarballs = tarballs.filter((file) => /switchyard-(core|sdk)-/.test(path.basename(file)));
    await run(npm, ['install', ...sdkTarballs, '--prefer-offline', '--no-audit', '--no-fund'], { cwd: project, maxBuffer: 16 * 1024 * 1024 });
  });

  function installedPackages(modules: string): string[] {
    const found: string[] = [];
    const visit = (dir: string): void => {
      if (!existsSync(path.join(dir, 'package.json'))) return;
      found.push(path.relative(path.join(project, 'node_modules'), dir));
      const nested = path.join(dir, 'node_modules');
      if (existsSync(nested)) walk(nested);
    };
    const walk = (dir: string): void => {
      for (const name of readdirSync(dir)) {
        if (name.startsWith('.')) continue; // .bin, .package-lock.json
        if (name.startsWith('@')) for (const scoped of readdirSync(path.join(dir, name))) visit(path.join(dir, name, scoped));
        else visit(path.join(dir, name));
      }
    };
    walk(modules);
    return found.sort();
  }

  function sizeOf(dir: string): { bytes: number; blocks: number } {
    let bytes = 0;
    let blocks = 0;
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        const inner = sizeOf(file);
        bytes += inner.bytes;
        blocks += inner.blocks;
      } else if (entry.isFile()) {
        const size = statSync(file).size;
        bytes += size;
        blocks += Math.ceil(size / 4096) * 4096;
      }
    }
    return { bytes, blocks };
  }

  test(`installs in at most ${MAX_PACKAGES} packages and ${MAX_BYTES / 1e6} MB, with no statistics code, and runs`, async () => {
    const modules = path.join(project, 'node_modules');
    const packages = installedPackages(modules);
    const { bytes, blocks } = sizeOf(modules);
    const figures = `${packages.length} packages, ${(bytes / 1e6).toFixed(2)} MB (${(blocks / 1e6).toFixed(2)} MB in 4 KiB blocks): ${packages.join(' ')}`;
    console.log(`# the SDK alone: ${figures}`);
    assert.ok(packages.includes('@switchyard/sdk') && packages.includes('@switchyard/core'), figures);
    assert.deepEqual(packages.filter((name) => name.startsWith('@stdlib/')), [], 'no statistics library');
    assert.ok(packages.length <= MAX_PACKAGES, figures);
    assert.ok(bytes <= MAX_BYTES, figures);

    // Everything it needs is there: it evaluates a flag in plain node.
    writeFileSync(path.join(project, 'run.mjs'), `import { SwitchyardClient, TestData } from '@switchyard/sdk';
const client = new SwitchyardClient({ testData: new TestData().setFlag('small', 'yes') });
console.log(JSON.stringify({ value: client.variation('small', { key: 'u' }, 'no'), stats: client.stats() }));
await client.close();
`);
    const { stdout } = await run(process.execPath, ['run.mjs'], { cwd: project, env: { PATH: process.env.PATH ?? '' }, timeout: 30_000 });
    assert.deepEqual(JSON.parse(stdout.trim()), { value: 'yes', stats: { queuedEvents: 0, queuedExposures: 0, droppedEvents: 0, droppedExposures: 0, sentEvents: 0, sentExposures: 0, failedAttempts: 0 } });
  });
});
